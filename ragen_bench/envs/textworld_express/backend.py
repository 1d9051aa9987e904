"""The one place that loads TextWorld-Express (``textworld-express`` 1.1.0) and its JVM.

Nothing here runs at import: registering the ``RAGEN/TWX-*`` ids and importing
``ragen_bench`` never touch the library, so they cost nothing without the ``twx`` extra.
:class:`TWXServer` is started by the env's first reset.
"""

from __future__ import annotations

import functools
import importlib
import shutil
import subprocess
from typing import Any

# The eight games of textworld-express 1.1.0, in the library's own order (getGameNames()).
GAMES = ("cookingworld", "twc", "coin", "mapreader", "arithmetic", "sorting", "simonsays", "peckingorder")

# TWX's own folds: 1000 seeds each (getValidSeedsTrain/Dev/Test(), the same for every game).
FOLD_SEEDS: dict[str, range] = {
    "train": range(0, 1000),
    "dev": range(10_000, 11_000),
    "test": range(20_000, 21_000),
}
# The Java side takes its seed as a 32-bit int.
SEED_LIMIT = 2**31

LIBRARY_HINT = "the RAGEN/TWX-* ids need textworld-express 1.1.0: pip install 'ragen-bench[twx]'"
JVM_HINT = (
    "the RAGEN/TWX-* ids need a Java runtime (textworld-express runs on a JVM) and no `java` is on PATH: "
    "install Debian's default-jre-headless (apt-get install default-jre-headless)"
)


# TWX 1.1.0 seeds these games' gold agents (a random walk through the house) from the clock, so
# its own gold path changes from one reset to the next.  For them the same agent class runs with
# its walk seeded by the episode's seed instead; the other six games' gold paths are fixed.
_SEEDED_GOLD_AGENTS = {"coin": "CoinGoldAgent", "twc": "TWCGoldAgent"}
# TWX's own generator gives its gold agent this many tries before giving up (1.1.0).
_GOLD_ATTEMPTS = 50


class TWXUnavailableError(OSError):
    """The library or the JVM it runs on is missing; the message says what to install.

    An ``OSError`` (what the machine lacks), so the CLI prints it as its one error line."""


def fold_of(seed: int) -> str:
    """TWX's fold for ``seed``: dev and test by their seed ranges, every other seed plays the train fold.

    TWX lists 1000 train seeds but generates a train-fold game for any seed, so the train
    split is open-ended while dev and test stay exactly TWX's held-out lists.
    """
    for fold in ("dev", "test"):
        if seed in FOLD_SEEDS[fold]:
            return fold
    return "train"


@functools.cache
def _library_env_class(library: Any) -> type:
    """The library's ``TextWorldExpressEnv`` with a ``__del__`` that is safe on a half-built object.

    The library's ``__del__`` calls ``close()``, which reads ``_gateway``: an object whose
    ``__init__`` failed before setting it (the JVM did not start) would print an
    ``AttributeError`` traceback when collected, at the latest at interpreter exit.
    Keyed by the module, so a test that hides the library still gets the ImportError.
    """

    class LibraryEnv(library.TextWorldExpressEnv):
        def __del__(self) -> None:
            if "_gateway" in self.__dict__:
                super().__del__()

    return LibraryEnv


class TWXServer:
    """One library env (``TextWorldExpressEnv``, its own JVM) with one game loaded.

    The Java classes a seeded gold path needs are looked up once here: each py4j look-up is a
    round trip to the JVM (about a millisecond).  A server cannot be copied (a JVM, its
    sockets and pipes); :class:`~ragen_bench.envs.textworld_express.env.TextWorldExpressEnv`
    copies an episode by replaying it in a new server (:meth:`replay`).
    """

    def __init__(self, game: str, step_limit: int) -> None:
        if shutil.which("java") is None:
            raise TWXUnavailableError(JVM_HINT)
        try:
            library = importlib.import_module("textworld_express")
        except ImportError:
            raise TWXUnavailableError(LIBRARY_HINT) from None
        self.game = game
        # Our env ends episodes itself (max_steps); the library's own limit only has to stay out of the way.
        self.env = _library_env_class(library)(envStepLimit=step_limit + 1)
        self.env.load(game, "")
        jvm = self.env._gateway.jvm
        agent = _SEEDED_GOLD_AGENTS.get(game)
        self._gold_agent = None if agent is None else getattr(jvm.textworldexpress.goldagent, agent)
        self._random = jvm.scala.util.Random

    def reset(self, seed: int) -> tuple[str, dict[str, Any], tuple[str, ...]]:
        """Start the game of ``seed`` in its fold: ``(observation, TWX's info, gold path)``, the same in every process."""
        fold = fold_of(seed)
        if self._gold_agent is None:
            observation, info = self.env.reset(seed=seed, gameFold=fold, generateGoldPath=True)
            return observation, info, tuple(self.env.getGoldActionSequence())
        walk = self._random(seed)
        for _ in range(_GOLD_ATTEMPTS):
            self.env.reset(seed=seed, gameFold=fold, generateGoldPath=False)
            # The agent plays the live game; it returns the game's whole action history, whose first
            # entry is the reset's own opening look.
            found = self._gold_agent(self.env.server.game()).mkGoldPath(walk)
            if found._1:
                gold = tuple(found._2)[1:]
                break
        else:
            raise RuntimeError(f"TextWorld-Express {self.game}: no gold path for seed {seed} in {_GOLD_ATTEMPTS} tries")
        observation, info = self.env.reset(seed=seed, gameFold=fold, generateGoldPath=False)  # the game afresh
        return observation, info, gold

    def step(self, action: str) -> tuple[str, dict[str, Any]]:
        observation, _, _, info = self.env.step(action)
        return observation, info

    def replay(self, seed: int, actions: list[str]) -> dict[str, Any]:
        """Play the game of ``seed`` again from its start with ``actions``; TWX's info after the last one.

        TWX generates a seed's game and answers its actions deterministically, so this reaches
        the position an earlier server reached with the same actions (the caller checks it).
        """
        _, info, _ = self.reset(seed)
        for action in actions:
            _, info = self.step(action)
        return info

    def __getstate__(self) -> dict[str, Any]:
        # Refused here, before copy or pickle builds anything: a half-copied library env is what
        # printed an AttributeError from the library's __del__ at exit.
        raise TypeError(
            f"TWXServer ({self.game}) runs a JVM and cannot be copied or pickled; copy the TextWorldExpressEnv "
            "instead, which replays its episode in a new JVM"
        )

    def close(self) -> None:
        """Stop the JVM and release its pipes (the library's ``close`` leaves them open)."""
        self.env.close()
        process = self.env._gateway.java_process
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
