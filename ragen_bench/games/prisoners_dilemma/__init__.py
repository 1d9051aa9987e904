"""Iterated Prisoner's Dilemma (``RAGEN/PrisonersDilemma-v0``): ``parallel_env()``, ``env()``, ``raw_env()``.

Needs PettingZoo (the ``games`` extra).
"""

from ragen_bench.games.prisoners_dilemma.env import PrisonersDilemmaEnv, env, parallel_env, raw_env

__all__ = ["PrisonersDilemmaEnv", "env", "parallel_env", "raw_env"]
