"""TextArena's two-player games (``RAGEN/TA-<Game>-v0``) on PettingZoo's AEC API, moves as free text.

Needs the ``textarena`` extra (TextArena and PettingZoo); importing this package loads PettingZoo,
making a game loads TextArena.
"""

from ragen_bench.games.textarena.env import MoveText, TextArenaGameEnv, env, raw_env

__all__ = ["MoveText", "TextArenaGameEnv", "env", "raw_env"]
