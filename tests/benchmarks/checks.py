"""What the benchmarks check about the results they time: a fast wrong answer measures nothing.

Fresh-seed resets start at seed 10,000, where every id's frozen ``train`` panel starts:
the panel pins the initial observation (SHA-256) and ``optimal_length`` of seeds
10,000..10,255, so each of those timed resets is checked against it.  Seed 123 is the
first seed of every ``test`` panel, likewise pinned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ragen_bench import panels

FIRST_FRESH_SEED = 10_000
PANEL_SEED = 123  # the first seed of every test panel


def fresh_seeds() -> Iterator[int]:
    return iter(range(FIRST_FRESH_SEED, 2**32))  # every reset builds a new level: nothing cached


def recorded(function: Callable[[], Any], results: list[Any]) -> Callable[[], None]:
    """``function`` with each result appended to ``results`` (costs one list append a call)."""
    append = results.append
    return lambda: append(function())


def time_first_steps(benchmark: Any, env: Any, actions: Iterator[Any], rounds: int = 2000) -> list[Any]:
    """Time ``env.step(next(actions))`` as the first step of a fresh ``reset(seed=PANEL_SEED)`` episode.

    A finished episode cannot be stepped, and many episodes end after one step or a few:
    every measured step is the first of a fresh episode (the reset is not timed).  Returns
    every step's result, for the caller to check.
    """
    results: list[Any] = []

    def fresh_episode() -> None:  # pedantic() would pass a returned value on as arguments
        env.reset(seed=PANEL_SEED)

    benchmark.pedantic(
        recorded(lambda: env.step(next(actions)), results),
        setup=fresh_episode, rounds=rounds, iterations=1, warmup_rounds=10,
    )
    assert results  # rounds + 10 calls when timed (one with --benchmark-disable)
    return results


def check_fresh_resets(env_id: str, results: list[tuple[str, dict[str, Any]]], *, lengths: bool = True) -> None:
    """Timed resets of seeds 10,000, 10,001, ... built those seeds' levels, as the train panel pins them.

    ``lengths=False``: the env was built not to solve on reset, so ``optimal_length`` is None.
    """
    panel = panels.load(env_id, "train")
    assert panel.seeds[0] == FIRST_FRESH_SEED and results, (panel.seeds[0], len(results))
    for offset, (observation, info) in enumerate(results):
        seed = FIRST_FRESH_SEED + offset
        if not info.get("fallbacks"):  # a Sokoban level re-seeded after a failed generation names its seed
            assert info["level_seed"] == seed, (offset, info["level_seed"])
        if offset < len(panel.seeds):
            assert panels.observation_sha256(observation) == panel.obs_sha256[offset], f"{env_id} seed {seed}"
            expected_length = panel.optimal_length[offset] if lengths and panel.optimal_length else None
            assert info.get("optimal_length") == expected_length, f"{env_id} seed {seed}"


def check_panel_reset(env_id: str, observation: str, info: dict[str, Any], *, lengths: bool = True) -> None:
    """``observation``/``info`` are what seed 123 (the test panel's first seed) gives."""
    panel = panels.load(env_id, "test")
    assert panel.seeds[0] == PANEL_SEED and info["level_seed"] == PANEL_SEED
    assert panels.observation_sha256(observation) == panel.obs_sha256[0], env_id
    expected_length = panel.optimal_length[0] if lengths and panel.optimal_length else None
    assert info.get("optimal_length") == expected_length, env_id


def short_sha(text: str) -> str:
    return panels.observation_sha256(text)[:16]
