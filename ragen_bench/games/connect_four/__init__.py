"""Connect Four (``RAGEN/ConnectFour-v0``): ``env()``, ``raw_env()``; the search opponent is in :mod:`.rules`.

Needs PettingZoo (the ``games`` extra).
"""

from ragen_bench.games.connect_four.env import ConnectFourEnv, env, raw_env

__all__ = ["ConnectFourEnv", "env", "raw_env"]
