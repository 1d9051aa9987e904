"""Sudoku: ``env`` (the Gymnasium env) -> ``actions`` (RAGEN-2's action text), ``solver`` (exact completions) -> ``puzzles`` (boards, RAGEN-2's generator)."""

from ragen_bench.envs.sudoku.env import SudokuConfig, SudokuEnv

__all__ = ["SudokuConfig", "SudokuEnv"]
