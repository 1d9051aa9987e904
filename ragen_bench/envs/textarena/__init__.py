"""TextArena: ``env`` (one single-player game, a Gymnasium env) -> ``library`` (the import, the isolated
random state, the observation text) and ``games`` (which games are ids, which are left out and why)."""

from ragen_bench.envs.textarena.env import TextArenaConfig, TextArenaEnv
from ragen_bench.envs.textarena.library import IsolatedRandom, TextArenaError

__all__ = ["IsolatedRandom", "TextArenaConfig", "TextArenaEnv", "TextArenaError"]
