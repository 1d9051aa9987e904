"""Tic-Tac-Toe (``RAGEN/TicTacToe-v0``): ``env()``, ``raw_env()`` and the exact minimax opponent.

Needs PettingZoo (the ``games`` extra).
"""

from ragen_bench.games.tictactoe.env import TicTacToeEnv, env, raw_env

__all__ = ["TicTacToeEnv", "env", "raw_env"]
