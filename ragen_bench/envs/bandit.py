"""RAGEN's two-armed bandit: do the arms' names hint at their payoffs?"""

from __future__ import annotations

from typing import Any

from gymnasium import spaces
from gymnasium.utils import seeding

from ragen_bench.envs.base import TextEnv, text_charset

# (low-risk name, high-risk name) pairs.  In the "train" and "test" pools the names
# suggest the payoffs (steady vs. bold); "test" pairs never appear in training.
# "reversed" pairs swap RAGEN's training names, so intuition points the wrong way.
NAME_POOLS: dict[str, tuple[tuple[str, str], ...]] = {
    "train": (("Phoenix", "Dragon"), ("Tortoise", "Hare"), ("Anchor", "Rocket")),
    "test": (("Trader", "Librarian"), ("Lighthouse", "Volcano"), ("Oak", "Lightning")),
    "reversed": (("Dragon", "Phoenix"),),
}

LOW_RISK_REWARD = 0.1
HIGH_RISK_JACKPOT = 1.0
HIGH_RISK_MISS = 0.0
HIGH_RISK_JACKPOT_PROB = 0.25

_MAX_NAME_CHARS = 40


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
    project's own.

    ## Action Space
    ``Discrete(2)``: the arm listed first or second in the observation.  ``action_names``
    holds the two names in that order and is updated at every reset, since the order
    depends on the seed.

    ## Observation Space
    ``Text``: a short paragraph naming both arms (reset), then the payoff (step).

    ## Rewards
    Low-risk arm: 0.1.  High-risk arm: 1.0 with probability 0.25, else 0.0.

    ## Episode End
    Terminated after the single pull.

    ## Arguments
    ``low_risk_name="Phoenix"``, ``high_risk_name="Dragon"`` (RAGEN's ``Bandit``);
    ``name_pool=None`` or a key of ``NAME_POOLS`` (``"train"``, ``"test"``,
    ``"reversed"``): seed ``s`` then uses pair ``s % len(pool)`` (no extra random draws,
    so arm order and payoffs stay RAGEN's); ``render_mode="ansi"`` or ``None``.

    ## Info
    Every call: ``success`` (the high-risk arm was pulled; ``False`` at reset),
    ``level_seed``, ``arm_order`` (names, first to second), ``high_risk_arm`` (its
    action id).  Step adds ``action_is_effective`` and ``action_is_valid`` (both true).
    Reset adds ``optimal_length`` = 1.

    ## Version History
    * v0: RAGEN-exact arm order and payoffs (RAGEN commit 5eb79b8).
    """

    symbol_meanings: dict[str, str] = {}

    def __init__(
        self,
        low_risk_name: str = "Phoenix",
        high_risk_name: str = "Dragon",
        name_pool: str | None = None,
        render_mode: str | None = "ansi",
    ) -> None:
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be 'ansi' or None, got {render_mode!r}")
        if name_pool is not None and name_pool not in NAME_POOLS:
            raise ValueError(f"name_pool must be one of {sorted(NAME_POOLS)} or None, got {name_pool!r}")
        self.pairs = NAME_POOLS[name_pool] if name_pool is not None else ((low_risk_name, high_risk_name),)
        for low, high in self.pairs:
            if low == high or not low or not high or max(len(low), len(high)) > _MAX_NAME_CHARS:
                raise ValueError(f"arm names must be distinct, non-empty and short, got {(low, high)!r}")
        self.name_pool = name_pool
        self.render_mode = render_mode
        self.instruction = (
            "You face a two-armed bandit and may pull one arm once. One arm pays a small reward "
            "every time; the other is a gamble. Judge from the arms' names which one pays more on "
            "average, and pull it."
        )

        texts = []
        for low, high in self.pairs:
            texts += [_intro(low, high), _intro(high, low), _outcome(low, LOW_RISK_REWARD)]
            texts += [_outcome(high, HIGH_RISK_JACKPOT), _outcome(high, HIGH_RISK_MISS)]
        self.observation_space = spaces.Text(max_length=max(map(len, texts)), charset=text_charset(*texts))
        self.action_space = spaces.Discrete(2)

        self.low_risk_name, self.high_risk_name = self.pairs[0]
        self.action_names = self.pairs[0]
        self._rng = seeding.np_random(0)[0]  # replaced on every reset
        self._text = ""
        self._pulled: int | None = None
        self._level_seed: int | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Order the arms for ``seed`` (RAGEN's), or for a seed drawn from ``np_random``."""
        super().reset(seed=seed)
        if options:
            raise ValueError(f"BanditEnv.reset takes no options, got {sorted(options)}")
        if seed is None:
            seed = int(self.np_random.integers(2**32))
        self._level_seed = seed
        self.low_risk_name, self.high_risk_name = self.pairs[seed % len(self.pairs)]
        # RAGEN: a fresh generator per reset; its first draw orders the arms and its next
        # draw (only if the high-risk arm is pulled) decides the jackpot.
        self._rng = seeding.np_random(seed)[0]
        low_first = self._rng.random() < 0.5
        low, high = self.low_risk_name, self.high_risk_name
        self.action_names = (low, high) if low_first else (high, low)
        self._pulled = None
        self._text = _intro(*self.action_names)
        info = self._info()
        info["optimal_length"] = 1
        return self._text, info

    def step(self, action: int) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not self._text:
            raise RuntimeError("call reset() before step()")
        action = int(action)
        if action not in (0, 1):
            raise ValueError(f"action must be 0 or 1, got {action}")
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

    def render(self) -> str | None:
        return self._text if self.render_mode == "ansi" else None

    def optimal_action(self, steps_left: int | None = None) -> int | None:
        """The high-risk arm (expected 0.25 beats the low-risk arm's 0.1)."""
        if not self._text or self._pulled is not None:
            return None
        return self.action_names.index(self.high_risk_name)

    def _info(self) -> dict[str, Any]:
        high_arm = self.action_names.index(self.high_risk_name)
        return {
            "success": self._pulled == high_arm,
            "level_seed": self._level_seed,
            "arm_order": self.action_names,
            "high_risk_arm": high_arm,
        }
