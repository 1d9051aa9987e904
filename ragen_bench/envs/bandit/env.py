"""RAGEN's two-armed bandit: do the arms' names hint at their payoffs?"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from ragen_bench.envs.base import TextEnv, TextObservation, ascii_casefold, text_charset
from ragen_bench.envs.config import EnvConfig, OneOf, OrNone, Text, setting

# (low-risk name, high-risk name) pairs.  The names suggest the payoffs (steady vs.
# bold); "test" pairs never appear in training.  (Bandit-Rev swaps RAGEN's names
# explicitly, with low_risk_name/high_risk_name.)
NAME_POOLS: dict[str, tuple[tuple[str, str], ...]] = {
    "train": (("Phoenix", "Dragon"), ("Tortoise", "Hare"), ("Anchor", "Rocket")),
    "test": (("Trader", "Librarian"), ("Lighthouse", "Volcano"), ("Oak", "Lightning")),
    # RAGEN-2's pools (mll-lab-nu/RAGEN 20daedc, the bandit config's arm names, as data):
    # its tags Bandit and BanditTest draw the pair from the seeded generator (see DRAWN_POOLS).
    "ragen2-train": (
        ("Teacher", "Trader"),
        ("Nurse", "StartupFounder"),
        ("Librarian", "Investor"),
        ("Accountant", "StockBroker"),
        ("Engineer", "RealEstateAgent"),
        ("Pharmacist", "Musician"),
        ("Clerk", "Freelancer"),
        ("Technician", "Youtuber"),
        ("Planner", "Artist"),
        ("Postman", "Pilot"),
        ("Banker", "VentureCapitalist"),
        ("Gardener", "Cryptominer"),
    ),
    "ragen2-test": (
        ("Receptionist", "Explorer"),
        ("Archivist", "Filmmaker"),
        ("Bookkeeper", "Consultant"),
        ("SocialWorker", "Photographer"),
        ("Mechanic", "GameDesigner"),
        ("Secretary", "Entrepreneur"),
        ("Cashier", "DataScientist"),
        ("CivilServant", "StartupAccelerator"),
    ),
}
# Pools whose pair is the seeded generator's first draw, ``int(u * len(pool))`` (RAGEN-2);
# the others take pair ``seed % len(pool)`` without a draw, leaving RAGEN v1's draws as they were.
DRAWN_POOLS = frozenset({"ragen2-train", "ragen2-test"})

LOW_RISK_REWARD = 0.1
HIGH_RISK_JACKPOT = 1.0
HIGH_RISK_MISS = 0.0
HIGH_RISK_JACKPOT_PROB = 0.25

# Words of ASCII letters and digits joined by single spaces or hyphens, at most 40
# characters: a name a reply can state.  "</answer>", "||" or "  Oak" would be cut or split
# by the chat parser, so the arm could never be pulled and even the optimal agent would score 0.
_ARM_NAME = Text(
    40,
    pattern=r"[A-Za-z0-9]+(?:[ -][A-Za-z0-9]+)*",
    pattern_says="words of ASCII letters and digits joined by single spaces or hyphens",
)


@dataclass(frozen=True)
class BanditConfig(EnvConfig):
    """BanditEnv's arguments (besides ``render_mode``)."""

    low_risk_name: str = setting("Phoenix", rule=_ARM_NAME, help="The arm that always pays 0.1 (RAGEN's Bandit: Phoenix).")
    high_risk_name: str = setting(
        "Dragon", rule=_ARM_NAME, help="The arm that pays 1.0 with probability 0.25 (RAGEN's Bandit: Dragon)."
    )
    name_pool: str | None = setting(
        None,
        rule=OrNone(OneOf(NAME_POOLS)),
        help="None: the two names above; a key of NAME_POOLS: the seed picks the pair from that pool "
        "(the names above are then unused).",
    )

    def pairs(self) -> tuple[tuple[str, str], ...]:
        """The (low-risk, high-risk) name pairs an episode may use."""
        return ((self.low_risk_name, self.high_risk_name),) if self.name_pool is None else NAME_POOLS[self.name_pool]

    def check_together(self, owner: str) -> None:
        # The chat layer tells the arms apart by ASCII case folding.
        for low, high in self.pairs():
            if ascii_casefold(low) == ascii_casefold(high):
                raise ValueError(f"{owner}: the two arm names must differ (ignoring case), got {(low, high)!r}")


def _intro(first: str, second: str) -> str:
    return (
        f"Two slot machines stand before you: {first} and {second}. "
        "Each pays out according to its own hidden distribution, and the names are a clue "
        f"to how each one behaves. You may pull exactly one. Which arm do you pull: {first} or {second}?"
    )


def _outcome(name: str, reward: float) -> str:
    return f"You pulled {name} and won {reward} points."


class BanditEnv(TextEnv):
    """Pull one of two arms once; the names are the only clue to their payoffs.

    ## Description
    RAGEN's Bandit: a single-step two-armed bandit.  The low-risk arm always pays 0.1;
    the high-risk arm pays 1.0 with probability 0.25 and 0 otherwise (expected 0.25, so
    it is the better arm).  Each seed shuffles which arm comes first.  Arm order and
    payoffs reproduce RAGEN (commit 5eb79b8) draw for draw; the wording is this
    project's own.  The ``ragen2-*`` pools reproduce RAGEN-2's (commit 20daedc) arm
    pairs, order and payoffs the same way.

    ## Action Space
    ``Discrete(2)``: the arm listed first or second in the observation.  ``action_names``
    holds the two names in that order and is updated at every reset, since the order
    depends on the seed.  Anything but an int (or numpy integer) in 0..1 raises
    ``InvalidActionError``.  Arm names are printable ASCII and are told apart by
    ASCII-only case folding (``ascii_casefold``), so look-alike letters such as the
    Kelvin sign never name an arm.

    ## Observation Space
    ``Text``: a short paragraph naming both arms (reset), then the payoff (step).

    ## Rewards
    Low-risk arm: 0.1.  High-risk arm: 1.0 with probability 0.25, else 0.0.

    ## Episode End
    Terminated after the single pull.  Pulling again raises ``EpisodeFinishedError``
    (``reset()`` starts the next episode).

    ## Arguments
    The fields of :class:`BanditConfig` (``low_risk_name``, ``high_risk_name``,
    ``name_pool``: defaults are RAGEN's ``Bandit``) and ``render_mode="ansi"`` or ``None``.
    ``name_pool`` is ``None`` or a key of ``NAME_POOLS``: with ``"train"`` or ``"test"`` seed
    ``s`` uses pair ``s % len(pool)`` (no extra random draws, so arm order and payoffs
    stay RAGEN's); with ``"ragen2-train"`` or ``"ragen2-test"`` (RAGEN-2's ``Bandit`` and
    ``BanditTest``) the seed's generator first draws the pair, as RAGEN-2 does.  Names must be 1..40 characters,
    words of ASCII letters and digits joined by single spaces or hyphens (so a reply can
    name them), and differ after ASCII case folding.

    ## Info
    Every call: ``success`` (the high-risk arm was pulled; ``False`` at reset),
    ``level_seed``, ``arm_order`` (names, first to second), ``high_risk_arm`` (its
    action id).  Step adds ``action_is_effective`` and ``action_is_valid`` (both true).
    Reset adds ``optimal_length`` = 1.

    ## Version History
    * v0: RAGEN-exact arm order and payoffs (RAGEN commit 5eb79b8).  Later hardening
      (a second pull raises instead of drawing a new outcome; ``1.5``/``"1"`` actions
      raise instead of being coerced) changed no seed's episode, so the ids stay v0.
      So did adding the ``ragen2-*`` pools.
    """

    symbol_meanings: dict[str, str] = {}

    def __init__(self, *, render_mode: str | None = "ansi", **kwargs: Any) -> None:
        """``kwargs``: the fields of :class:`BanditConfig`."""
        super().__init__(render_mode)
        self.pairs = self._configure(BanditConfig, kwargs).pairs()
        self.instruction = (
            "You face a two-armed bandit and may pull one arm once. One arm pays a small reward "
            "every time; the other is a gamble. Judge from the arms' names which one pays more on "
            "average, and pull it."
        )

        texts = []
        for low, high in self.pairs:
            texts += [_intro(low, high), _intro(high, low), _outcome(low, LOW_RISK_REWARD)]
            texts += [_outcome(high, HIGH_RISK_JACKPOT), _outcome(high, HIGH_RISK_MISS)]
        self.observation_space = TextObservation(max_length=max(map(len, texts)), charset=text_charset(*texts))
        self._set_action_space(spaces.Discrete(2))

        self.low_risk_name, self.high_risk_name = self.pairs[0]
        self.action_names = self.pairs[0]
        self._rng = np.random.default_rng(0)  # re-seeded on every reset
        self._text = ""
        self._pulled: int | None = None

    def _reset_level(self, seed: int) -> tuple[str, dict[str, Any]]:
        """Pick and order the arms for ``seed`` (RAGEN's)."""
        # RAGEN: a fresh generator per reset; its first draw orders the arms (RAGEN-2: picks
        # the pair, then orders) and its next draw (only if the high-risk arm is pulled)
        # decides the jackpot.
        self._rng.bit_generator.state = self._fresh_generator_state(seed)
        drawn = self.name_pool in DRAWN_POOLS
        index = int(self._rng.random() * len(self.pairs)) if drawn else seed % len(self.pairs)
        self.low_risk_name, self.high_risk_name = self.pairs[index]
        low_first = self._rng.random() < 0.5
        low, high = self.low_risk_name, self.high_risk_name
        self.action_names = (low, high) if low_first else (high, low)
        self._pulled = None
        self._text = _intro(*self.action_names)
        info = self._info()
        info["optimal_length"] = 1
        return self._text, info

    def _step_action(self, action: int) -> tuple[str, float, bool, bool, dict[str, Any]]:
        name = self.action_names[action]
        if name == self.low_risk_name:
            reward = LOW_RISK_REWARD
        else:
            reward = HIGH_RISK_JACKPOT if self._rng.random() < HIGH_RISK_JACKPOT_PROB else HIGH_RISK_MISS
        self._pulled = action
        self._text = _outcome(name, reward)
        info = self._info()
        info["action_is_effective"] = True
        info["action_is_valid"] = True
        return self._text, reward, True, False, info

    def render_text(self) -> str:
        return self._text

    def optimal_action(self, steps_left: int | None = None) -> int | None:
        """The high-risk arm (expected 0.25 beats the low-risk arm's 0.1)."""
        if not self._text or self._pulled is not None:
            return None
        return self.action_names.index(self.high_risk_name)

    def _info(self) -> dict[str, Any]:
        high_arm = self.action_names.index(self.high_risk_name)
        return {
            "success": self._pulled == high_arm,
            "level_seed": self.level_seed,
            "arm_order": self.action_names,
            "high_risk_arm": high_arm,
        }
