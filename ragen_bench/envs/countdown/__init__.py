"""Countdown: ``env`` (env, generator, scoring) -> ``solver`` (exhaustive search) -> ``arith`` (parser)."""

from ragen_bench.envs.countdown.env import CountdownConfig, CountdownEnv

__all__ = ["CountdownConfig", "CountdownEnv"]
