"""Sokoban speed: reset (fresh RAGEN-exact generation), step, render, solve per id,
and TextArena's Sokoban-v0 measured in the same run as a reference point.

    make bench     # or: .venv/bin/python -m pytest tests/benchmarks/test_bench_sokoban.py --benchmark-enable

Every benchmark checks what it timed (``checks.py``): levels against the frozen panels,
the step walk against its known outcome, plans by playing them.
"""

from __future__ import annotations

import hashlib
import itertools

import gymnasium
import numpy as np
import pytest

import ragen_bench
from ragen_bench import panels
from tests.benchmarks.checks import PANEL_SEED, check_fresh_resets, check_panel_reset, fresh_seeds, recorded

SOKOBAN_IDS = [i for i in ragen_bench.ENV_IDS if i.startswith("RAGEN/Sokoban-")]
# 10x10 generation takes milliseconds; fewer rounds keep the run short.
ROUNDS = {"RAGEN/Sokoban-10x10-v0": 60}
WALK = [0, 3, 1, 2, 2, 1, 0, 3, 3]  # Up, Right, Down, Left, ... cycled by the step benchmark
# The walk's first 900 steps from seed 123 (restarting the level when solved): SHA-256[:16]
# of every (observation, reward, terminated), and how many times it solved the level.
WALK_900 = {
    "RAGEN/Sokoban-6x6-v0": ("e629deb1c45a5145", 100),
    "RAGEN/Sokoban-8x8-v0": ("2a8fdb97e964cff5", 0),
    "RAGEN/Sokoban-6x6-AltVocab-v0": ("1d945becd61663be", 100),
    "RAGEN/Sokoban-10x10-v0": ("bf6f4d22df930ba4", 0),
    "RAGEN/Sokoban-6x6-Coord-v0": ("ff649cd7c36b521c", 100),
}


def _bench(benchmark, env_id, function):
    rounds = ROUNDS.get(env_id)
    if rounds:
        return benchmark.pedantic(function, rounds=rounds, iterations=1, warmup_rounds=2)
    return benchmark(function)


def _walk_env(env_id: str):
    # No step cap, so the walk never truncates; a finished episode cannot be stepped, so
    # solving the level restarts it from the cached level.
    env = gymnasium.make(env_id, solve_on_reset=False, max_steps=2**62).unwrapped
    env.reset(seed=PANEL_SEED)
    return env


def _replay_walk(env_id: str, steps: int) -> tuple[str, int, str]:
    """The walk's final observation, its number of solves, and the digest of its first 900 steps."""
    env = _walk_env(env_id)
    digest, solves = hashlib.sha256(), 0
    for index, action in enumerate(itertools.islice(itertools.cycle(WALK), max(steps, 900))):
        observation, reward, terminated, _, _ = env.step(action)
        if index < 900:
            digest.update(f"{observation}|{reward}|{terminated}".encode())
        if terminated:
            solves += index < steps
            env.reset(seed=PANEL_SEED)
        if index + 1 == steps:
            final = env.render()
        if index + 1 == 900:
            head = (digest.hexdigest()[:16], solves if steps >= 900 else None)
    return final, solves, head


@pytest.mark.parametrize("env_id", SOKOBAN_IDS)
def test_reset_generation(benchmark, env_id):
    benchmark.group = "sokoban reset (generation only)"
    env = gymnasium.make(env_id, solve_on_reset=False).unwrapped
    seeds, results = fresh_seeds(), []
    _bench(benchmark, env_id, recorded(lambda: env.reset(seed=next(seeds)), results))
    check_fresh_resets(env_id, results, lengths=False)


@pytest.mark.parametrize("env_id", SOKOBAN_IDS)
def test_reset_with_optimal_length(benchmark, env_id):
    benchmark.group = "sokoban reset (generation + solver)"
    env = gymnasium.make(env_id).unwrapped
    seeds, results = fresh_seeds(), []
    _bench(benchmark, env_id, recorded(lambda: env.reset(seed=next(seeds)), results))
    check_fresh_resets(env_id, results)


@pytest.mark.parametrize("env_id", SOKOBAN_IDS)
def test_step(benchmark, env_id):
    benchmark.group = "sokoban step (incl. text observation)"
    env = _walk_env(env_id)
    actions, taken, solves = itertools.cycle(WALK), itertools.count(), [0]

    def step():
        next(taken)
        if env.step(next(actions))[2]:
            solves[0] += 1
            env.reset(seed=PANEL_SEED)

    benchmark(step)
    steps = next(taken)
    final, replayed_solves, head = _replay_walk(env_id, steps)
    # The timed steps played the walk exactly as an untimed replay does, and it is the known walk.
    assert (env.render(), solves[0]) == (final, replayed_solves)
    expected_digest, expected_solves = WALK_900[env_id]
    assert head == (expected_digest, expected_solves if steps >= 900 else None)


@pytest.mark.parametrize("env_id", SOKOBAN_IDS)
def test_render(benchmark, env_id):
    benchmark.group = "sokoban render"
    env = gymnasium.make(env_id, solve_on_reset=False).unwrapped
    _, info = env.reset(seed=PANEL_SEED)
    check_panel_reset(env_id, benchmark(env.render), info, lengths=False)


@pytest.mark.parametrize("env_id", SOKOBAN_IDS)
def test_solve(benchmark, env_id):
    benchmark.group = "sokoban solve (BFS, panel seed 123)"
    env = gymnasium.make(env_id, solve_on_reset=False).unwrapped
    env.reset(seed=PANEL_SEED)
    plan = _bench(benchmark, env_id, env.solve)
    # A shortest plan: as long as the panel's optimal length, and it solves the level.
    assert len(plan) == panels.load(env_id, "test").optimal_length[0]
    for action in plan[:-1]:
        assert env.step(action)[2] is False
    _, reward, terminated, _, info = env.step(plan[-1])
    assert terminated and info["success"] and reward > 1


@pytest.fixture(scope="module")
def textarena_sokoban():
    textarena = pytest.importorskip("textarena", reason="peer benchmark needs the 'peers' extra")
    return textarena.make("Sokoban-v0")


def _unwrapped(env):
    while hasattr(env, "env"):
        env = env.env
    return env


def _room(env) -> np.ndarray:
    return _unwrapped(env).room_state


def test_textarena_reset(benchmark, textarena_sokoban):
    benchmark.group = "sokoban reset (generation only)"
    seeds, rooms = fresh_seeds(), []

    def reset():
        textarena_sokoban.reset(num_players=1, seed=next(seeds))
        level = _unwrapped(textarena_sokoban)
        return level.room_state.copy(), level.room_fixed.copy()

    benchmark.pedantic(recorded(reset, rooms), rounds=30, warmup_rounds=2)
    # Each reset built a level with one player (5) and three boxes (3 on a target, 4 off)
    # on three targets (2 in the fixed layer).  TextArena's generator is not RAGEN's, so
    # only its own determinism is comparable: the last seed again gives the same room.
    for room, fixed in rooms:
        assert (room == 5).sum() == 1 and np.isin(room, (3, 4)).sum() == 3 and (fixed == 2).sum() == 3
    textarena_sokoban.reset(num_players=1, seed=next(seeds) - 1)
    assert np.array_equal(_room(textarena_sokoban), rooms[-1][0])


def test_textarena_step(benchmark, textarena_sokoban):
    benchmark.group = "sokoban step (incl. text observation)"
    textarena_sokoban.reset(num_players=1, seed=PANEL_SEED)
    moves = itertools.cycle(["[up]", "[right]", "[down]", "[left]"])
    results = []

    def step():
        textarena_sokoban.step(next(moves))
        return textarena_sokoban.get_observation(), _room(textarena_sokoban).copy()

    benchmark.pedantic(recorded(step, results), rounds=50, warmup_rounds=2)
    # Every step answered with the board, and the timed steps moved as a replay of the
    # moves does (TextArena's observation text also carries earlier episodes' messages,
    # so the rooms are compared).
    assert all(text.rstrip().endswith("Available Moves: up, down, left, right") for (_, text), _ in results)
    textarena_sokoban.reset(num_players=1, seed=PANEL_SEED)
    replay_moves = itertools.cycle(["[up]", "[right]", "[down]", "[left]"])
    for _, room in results:
        textarena_sokoban.step(next(replay_moves))
        assert np.array_equal(_room(textarena_sokoban), room)


@pytest.mark.parametrize("env_id", SOKOBAN_IDS)
def test_reset_repeated_seed(benchmark, env_id):
    # pass@k samples and GRPO groups reset the same seed again: served from the level cache.
    benchmark.group = "sokoban reset (repeated seed, cached level)"
    env = gymnasium.make(env_id).unwrapped
    observation, info = benchmark(lambda: env.reset(seed=PANEL_SEED))
    check_panel_reset(env_id, observation, info)
