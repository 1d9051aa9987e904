"""TextWorld-Express games behind the TextEnv contract: TWX's folds as our splits, its gold paths as the optimal agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ragen_bench.envs.base import AnyText, InvalidActionError, TextEnv, text_charset
from ragen_bench.envs.config import EnvConfig, IntIn, IsBool, OneOf, setting
from ragen_bench.envs.textworld_express.backend import FOLD_SEEDS, GAMES, SEED_LIMIT, TWXServer, fold_of

MAX_ACTION_CHARS = 200
MAX_OBSERVATION_CHARS = 100_000
VALID_ACTIONS_HEADER = "Valid actions: "
UNLISTED = "That is not a valid action here."

# The goal of each game in our words; the episode's own task text comes with the first observation.
GOALS: dict[str, str] = {
    "cookingworld": "Cook a meal in a house: find and read the cookbook, gather the ingredients it lists, "
    "prepare them as the recipe says (chop, slice, dice, roast, fry), then prepare the meal and eat it.",
    "twc": "Tidy a house: pick up the objects that are out of place and put each where it usually belongs.",
    "coin": "Explore a house, opening doors where you must, until you find the coin; then take it.",
    "mapreader": "Carry the coin from the room the task names to the box in another room; a map of the "
    "house is there to read.",
    "arithmetic": "Read the math problem, work out its answer, then put the item whose quantity equals "
    "the answer into the box.",
    "sorting": "Put the objects into the box one at a time, from the smallest quantity to the largest "
    "(mind the units: 900ml is less than 1l).",
    "simonsays": "Do exactly what Simon says, one action at a time, and nothing else.",
    "peckingorder": "Read the instructions book and do what it says, again and again, until the game is done.",
}


class ValidActionText(AnyText):
    """The actions valid in the current state: ``contains`` is exact membership, ``sample`` draws one of them.

    The env sets :attr:`valid` after every reset and step.  Before the first reset no action
    is valid and ``sample`` falls back to random text.
    """

    valid: tuple[str, ...] = ()

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and x in self.valid

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if not self.valid:
            return super().sample(mask, probability)
        return self.valid[int(self.np_random.integers(len(self.valid)))]

    def __repr__(self) -> str:
        return f"ValidActionText({len(self.valid)} valid now)"


@dataclass(frozen=True)
class TextWorldExpressConfig(EnvConfig):
    """TextWorldExpressEnv's arguments (besides ``render_mode``)."""

    game: str = setting("coin", rule=OneOf(GAMES), help="Which of TextWorld-Express's eight games.")
    valid_actions_in_prompt: bool = setting(
        True, rule=IsBool(), help="List the valid actions after each state (TWX's own list, sorted)."
    )
    max_steps: int = setting(100, rule=IntIn(1, 10_000), help="Steps before truncation (TWX's own default limit).")


class TextWorldExpressEnv(TextEnv):
    """One TextWorld-Express game (``textworld-express`` 1.1.0, on a JVM), seed by seed.

    ## Description
    The eight games of TextWorld-Express (Jansen and Côté, 2022) -- cookingworld, twc, coin,
    mapreader, arithmetic, sorting, simonsays, peckingorder -- played through the library
    itself at its default game parameters.  The seed is TWX's own seed, and the fold follows
    from it: TWX's dev seeds 10000..10999 play the dev fold, its test seeds 20000..20999 the
    test fold, every other seed the train fold (TWX lists 0..999; it generates any seed).
    The folds differ in content (TWX keeps some objects and ingredients for dev and test).

    ## Action Space
    :class:`ValidActionText`: the space contains exactly the actions TWX lists as valid in
    the current state (``"open door to north"``, ``"take coin"``), matched exactly; that is
    what ``sample()`` draws and what the chat layer accepts (any other answer there is an
    invalid action: not played, and it costs the format penalty).  ``step`` also takes any
    other ``str`` of at most 200 characters -- a typo, other casing, a command TWX does not
    know -- and answers ``That is not a valid action here.``: nothing changes, the step
    counts.  A non-``str`` or a longer text raises ``InvalidActionError``.

    ## Observation Space
    ``AnyText(1, 100000)``.  Reset: the episode's task (TWX's task description), a blank
    line, the opening room description.  Step: TWX's answer to the action.  With
    ``valid_actions_in_prompt`` (default) a last line ``Valid actions: a, b, ...`` lists the
    valid actions, sorted and without duplicates.

    ## Starting State
    The game TWX generates for (game, fold, seed), with its gold action sequence: the
    ``optimal`` agent follows it (``optimal_action``) while every action so far did.  TWX
    1.1.0 draws the coin and twc gold paths (a random walk) from the clock; here the same
    gold agent walks with its random generator seeded by the seed, so every gold path is
    the same in every process.

    ## Rewards
    TWX's normalised score change (its score runs from 0 to 1 on a won game; a failed task --
    a wrong move in arithmetic, sorting, simonsays or peckingorder -- ends it at -1).

    ## Episode End
    Terminated when TWX reports the task done (success) or failed.  Truncated after
    ``max_steps`` actions.

    ## Information
    Every call: ``success``, ``level_seed``, ``fold``, ``score``, ``valid_actions`` (the tuple
    the action space holds).  Reset adds ``gold_length`` (the length of TWX's gold path, which
    may explore or run one action past the win) and ``optimal_length`` = None (no shortest
    length is known).  Step
    adds ``action_is_valid`` (the action was listed) and ``action_is_effective`` (the
    score rose).

    ## Arguments
    The fields of :class:`TextWorldExpressConfig` (``game``, ``valid_actions_in_prompt``,
    ``max_steps``), ``render_mode="ansi"`` or ``None``.  Each env runs its
    own JVM, started by the first reset and stopped by ``close()``; a missing library or
    ``java`` raises ``TWXUnavailableError`` naming what to install.

    ## Copies
    ``copy.deepcopy`` and ``pickle`` copy the episode, not the JVM: the copy starts a JVM of
    its own when it next steps and replays the episode's seed and the actions TWX was sent so
    far (TWX plays them deterministically), then checks that it reached the same score and
    valid actions.  So a copy goes on exactly as the original; a step after ``close()`` in
    the middle of an episode resumes it the same way.

    ## Version History
    * v0: textworld-express 1.1.0, default game parameters.
    """

    action_names = None
    symbol_meanings: dict[str, str] = {}
    seed_limit: ClassVar[int] = SEED_LIMIT
    # Our panels on TWX's folds (read by ragen_bench.panels): val is TWX's dev list, test its test list.
    split_seeds: ClassVar[dict[str, range]] = {
        "train": range(0, 256),
        "val": FOLD_SEEDS["dev"],
        "test": FOLD_SEEDS["test"],
    }

    def __init__(self, *, render_mode: str | None = "ansi", **kwargs: Any) -> None:
        """``kwargs``: the fields of :class:`TextWorldExpressConfig`."""
        super().__init__(render_mode)
        self._configure(TextWorldExpressConfig, kwargs)
        listing = "listed after each state" if self.valid_actions_in_prompt else "TWX accepts in this state"
        self.instruction = (
            f"{GOALS[self.game]} Each turn, answer with exactly one action, written exactly as one of "
            f"the valid actions {listing} (for example: look around); any other text is an invalid action."
        )
        self.observation_space = AnyText(min_length=1, max_length=MAX_OBSERVATION_CHARS, charset=_SAMPLE_CHARSET)
        self._set_action_space(ValidActionText(min_length=1, max_length=MAX_ACTION_CHARS, charset=_SAMPLE_CHARSET))
        self._server: TWXServer | None = None
        self._sent: list[str] = []  # the actions TWX was sent this episode: what a copy replays
        self._gold: tuple[str, ...] = ()
        self._next_gold: int | None = None  # index of the gold path's next action; None once off it
        self._steps = 0
        self._score = 0.0
        self._success = False
        self._text = ""

    def _draw_seed(self) -> int:
        # An unseeded reset plays one of TWX's listed train seeds, never a held-out one.
        train = FOLD_SEEDS["train"]
        return train.start + int(self.np_random.integers(len(train)))

    def _reset_level(self, seed: int) -> tuple[str, dict[str, Any]]:
        if self._server is None:
            self._server = TWXServer(self.game, self.max_steps)
        observation, twx, self._gold = self._server.reset(seed)
        self._sent = []
        self._next_gold = 0
        self._steps = 0
        self._score = 0.0
        self._success = False
        self._show(f"{twx['taskDescription'].strip()}\n\n{observation.strip()}", twx["validActions"])
        info = self._info()
        # TWX's gold path is a reference plan, not a shortest one (coin's explores room by room,
        # twc's may add a move after the game is won), so no optimal length is claimed.
        info["optimal_length"] = None
        info["gold_length"] = len(self._gold)
        return self._text, info

    def _step_action(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self._steps += 1
        truncated = self._steps >= self.max_steps
        if action not in self.action_space.valid:
            # Answered here, never sent to the JVM: TWX would only say "Unknown action" too.
            self._show(UNLISTED, self.action_space.valid)
            info = self._info()
            info["action_is_valid"] = info["action_is_effective"] = False
            return self._text, 0.0, False, truncated, info
        ahead = self._gold_ahead()
        self._next_gold = ahead + 1 if ahead is not None and action == self._gold[ahead] else None
        observation, twx = self._live_server().step(action)
        self._sent.append(action)
        reward = float(twx["score"]) - self._score
        self._score = float(twx["score"])
        self._success = bool(twx["tasksuccess"])
        terminated = self._success or bool(twx["taskfailure"])
        self._show(observation.strip(), twx["validActions"])
        info = self._info()
        info["action_is_valid"] = True
        info["action_is_effective"] = reward > 0
        return self._text, reward, terminated, truncated and not terminated, info

    def _live_server(self) -> TWXServer:
        """The JVM holding this episode's game; one a copy (or a closed env) builds by replaying the episode."""
        if self._server is None:
            server = TWXServer(self.game, self.max_steps)
            try:
                twx = server.replay(self.level_seed, self._sent)
                self._check_replay(twx)
            except BaseException:
                server.close()
                raise
            self._server = server
        return self._server

    def _check_replay(self, twx: dict[str, Any]) -> None:
        """Refuse to go on from a replay that did not reach the position the episode was in."""
        reached = (float(twx["score"]), tuple(sorted(set(twx["validActions"]))))
        if reached != (self._score, self.action_space.valid):
            raise RuntimeError(
                f"{type(self).__name__} ({self.game}): replaying seed {self.level_seed} with its {len(self._sent)} "
                f"actions in a new JVM reached score {reached[0]} and {len(reached[1])} valid actions, not the "
                f"episode's score {self._score} and {len(self.action_space.valid)} valid actions"
            )

    def __getstate__(self) -> dict[str, Any]:
        # The JVM cannot be copied; the copy rebuilds the game from the seed and ``_sent`` (_live_server).
        state = dict(self.__dict__)
        state["_server"] = None
        return state

    def _show(self, text: str, valid_actions: list[str]) -> None:
        # TWX's list has no fixed order (and may repeat an action): sorted, it is the same in every process.
        self.action_space.valid = tuple(sorted(set(valid_actions)))
        if self.valid_actions_in_prompt:
            text = f"{text}\n\n{VALID_ACTIONS_HEADER}{', '.join(self.action_space.valid)}"
        self._text = text

    def render_text(self) -> str:
        return self._text

    def optimal_action(self, steps_left: int | None = None) -> str | None:
        """The next action of TWX's gold path, while every listed action so far followed it (else ``None``)."""
        ahead = None if self.episode_finished else self._gold_ahead()
        return None if ahead is None else self._gold[ahead]

    def _gold_ahead(self) -> int | None:
        """Index of the gold path's next listed action.  Some cookingworld gold paths hold an action TWX
        does not list at that point (opening a cupboard that is open): TWX would answer it as an
        unknown action and change nothing, so it is passed over."""
        if self._next_gold is None:
            return None
        listed = self.action_space.valid
        return next((i for i in range(self._next_gold, len(self._gold)) if self._gold[i] in listed), None)

    def _check_action(self, action: Any) -> str:
        if isinstance(action, str) and len(action) <= MAX_ACTION_CHARS:
            return action
        shown = repr(action) if len(repr(action)) <= 80 else repr(action)[:77] + "..."
        raise InvalidActionError(
            f"{type(self).__name__}: invalid action {shown} ({type(action).__name__}); expected a str of at most "
            f"{MAX_ACTION_CHARS} characters, one of: {', '.join(self.action_space.valid)}"
        )

    def _info(self) -> dict[str, Any]:
        return {
            "success": self._success,
            "level_seed": self.level_seed,
            "fold": fold_of(self.level_seed),
            "score": self._score,
            "valid_actions": self.action_space.valid,
        }

    def close(self) -> None:
        """Stop this env's JVM (a later reset starts a new one; a later step replays the episode in one)."""
        if self._server is not None:
            server, self._server = self._server, None
            server.close()


_SAMPLE_CHARSET = text_charset("abcdefghijklmnopqrstuvwxyz ")
