"""Countdown: ``env`` (env, generator, scoring) -> ``solver`` (exhaustive search) -> ``arith`` (parser)."""

from ragen_bench.envs.countdown.env import CountdownEnv

__all__ = ["CountdownEnv"]
