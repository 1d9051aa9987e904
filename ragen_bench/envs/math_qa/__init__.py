"""MathQA: ``env`` (the Gymnasium env, answer checking) -> ``questions`` (files and built-in problems)."""

from ragen_bench.envs.math_qa.env import MathQAConfig, MathQAEnv

__all__ = ["MathQAConfig", "MathQAEnv"]
