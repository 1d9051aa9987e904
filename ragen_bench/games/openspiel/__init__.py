"""Curated two-player OpenSpiel games (``RAGEN/OS-<Game>-v0``) through shimmy's PettingZoo wrapper.

Needs the ``openspiel`` extra (open-spiel and shimmy); importing this package loads ``pyspiel``.
"""

from ragen_bench.games.openspiel.env import OpenSpielGameEnv, env, raw_env

__all__ = ["OpenSpielGameEnv", "env", "raw_env"]
