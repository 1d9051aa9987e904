"""The one place that loads TextWorld-Express (``textworld-express`` 1.1.0) and its JVM.

Nothing here runs at import: registering the ``RAGEN/TWX-*`` ids and importing
``ragen_bench`` never touch the library, so they cost nothing without the ``twx`` extra.
:class:`TWXServer` is started by the env's first reset.
"""

from __future__ import annotations

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


class TWXServer:
    """One library env (``TextWorldExpressEnv``, its own JVM) with one game loaded.

    The Java classes a seeded gold path needs are looked up once here: each py4j look-up is a
    round trip to the JVM (about a millisecond).
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
        self.env = library.TextWorldExpressEnv(envStepLimit=step_limit + 1)
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
