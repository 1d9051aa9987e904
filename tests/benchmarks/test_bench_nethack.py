"""Speed of the MiniHack and NetHack ids beside nle's own env, in the same run.

    RAGEN_BENCH_BENCHMARKS=1 .venv-nethack/bin/python -m pytest tests/benchmarks/test_bench_nethack.py \
        --benchmark-enable --benchmark-only --benchmark-columns=median,iqr,ops,rounds

Per task, two envs: ``RAGEN/MiniHack-Corridor-R3-v0`` or ``RAGEN/NetHack-v0`` (ours: the library
env behind the TextEnv contract, its screen in words) and the same library env itself (made by
``backend.make`` with the same arguments, seeded the same way, its observation arrays).  Resets build
fresh seeds' levels (10,000 on: ours are checked against the train panel); each timed step is the
first step (``search``: it never ends an episode) of seed 123's episode, the reset not timed.
"""

from __future__ import annotations

import importlib.util
import itertools

import gymnasium
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench.data.nethack import ACTION_KEYS
from tests.benchmarks.checks import PANEL_SEED, check_fresh_resets, fresh_seeds, recorded, time_first_steps

TASKS = {"Corridor-R3": "RAGEN/MiniHack-Corridor-R3-v0", "NetHack": "RAGEN/NetHack-v0"}

pytestmark = pytest.mark.skipif(importlib.util.find_spec("nle") is None,
                                reason="needs the nethack extra in its own venv: scripts/setup_nethack_venv.sh")


class Library:
    """nle's env as ours drives it (same arguments, same seeding), without the text view."""

    def __init__(self, task: str) -> None:
        from ragen_bench.envs.nethack import backend

        self.backend, self.env = backend, backend.make(task)
        self.search = [int(key) for key in self.env.actions].index(ACTION_KEYS["search"])

    def reset(self, seed: int):
        self.backend.seed(self.env, seed)
        return self.env.reset()

    def step(self, action: int):
        return self.env.step(action)


@pytest.mark.parametrize("task", TASKS)
def test_reset_ours(benchmark, task):
    env, seeds, results = gymnasium.make(TASKS[task]).unwrapped, fresh_seeds(), []
    benchmark.pedantic(recorded(lambda: env.reset(seed=next(seeds)), results), rounds=100, iterations=1)
    check_fresh_resets(TASKS[task], results)


@pytest.mark.parametrize("task", TASKS)
def test_reset_library(benchmark, task):
    env, seeds, results = Library(task), fresh_seeds(), []
    benchmark.pedantic(recorded(lambda: env.reset(seed=next(seeds)), results), rounds=100, iterations=1)
    # nle hands out views of its own buffers: the last result holds the last seed's level, as ours draws it.
    ours = gymnasium.make(TASKS[task]).unwrapped
    text, _ = ours.reset(seed=10_000 + len(results) - 1)
    drawn = [bytes(row).decode().strip() for row in results[-1][0]["chars"]]
    assert all(row in text for row in drawn if row) and len(results) >= 100


@pytest.mark.parametrize("task", TASKS)
def test_step_ours(benchmark, task):
    env = gymnasium.make(TASKS[task]).unwrapped
    results = time_first_steps(benchmark, env, itertools.repeat(env.action_names.index("search")), rounds=500)
    assert all(result == results[0] for result in results) and results[0][0].startswith("Message: ")
    assert results[0][2:4] == (False, False)


@pytest.mark.parametrize("task", TASKS)
def test_step_library(benchmark, task):
    env = Library(task)
    env.reset = lambda seed, reset=env.reset: reset(seed)  # time_first_steps resets with seed=
    results = time_first_steps(benchmark, env, itertools.repeat(env.search), rounds=500)
    ours = gymnasium.make(TASKS[task]).unwrapped
    ours.reset(seed=PANEL_SEED)
    status = ours.step(ours.action_names.index("search"))[0].splitlines()[-1]
    assert all(bytes(result[0]["chars"]) == bytes(results[0][0]["chars"]) for result in results)
    assert f"turn {int(results[0][0]['blstats'][20])}," in status and results[0][2:4] == (False, False)
