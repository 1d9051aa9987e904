"""FrozenLake: RAGEN fidelity, Gymnasium API, determinism, generator, value iteration."""

from __future__ import annotations

import copy

import gymnasium
import numpy as np
import pytest
from gymnasium.utils import seeding

import ragen_bench
from ragen_bench.envs.frozen_lake import FrozenLakeEnv, levels, solver
from ragen_bench.envs.frozen_lake.levels import generate_lake
from ragen_bench.envs.base import EpisodeFinishedError, ResetNeededError
from ragen_bench.registry import entry
from tests import env_contract
from tests.conftest import reference_records

LAKE_IDS = [i for i in ragen_bench.ENV_IDS if i.startswith("RAGEN/FrozenLake-")]
ACTIONS = {name: index for index, name in enumerate(FrozenLakeEnv.action_names)}
LEFT, DOWN, RIGHT, UP = range(4)


def make(env_id: str = "RAGEN/FrozenLake-4x4-v0", **kwargs) -> FrozenLakeEnv:
    return gymnasium.make(env_id, **kwargs).unwrapped


def test_ids_cover_ragen_size_and_slip_variants():
    assert {"RAGEN/FrozenLake-4x4-v0", "RAGEN/FrozenLake-8x8-v0", "RAGEN/FrozenLake-4x4-NoSlip-v0"} <= set(LAKE_IDS)
    assert entry("RAGEN/FrozenLake-4x4-v0").ragen_name == "FrozenLake"
    assert FrozenLakeEnv.action_names == ("Left", "Down", "Right", "Up")


# -- fidelity to RAGEN ---------------------------------------------------------------


def test_lakes_and_slips_match_ragen_reference_exactly():
    records = reference_records("FrozenLake")
    assert len(records) >= 300
    env = make()
    for record in records:
        obs, info = env.reset(seed=record["seed"])
        assert obs == record["obs"], f"seed {record['seed']}: initial grid differs"
        for index, step in enumerate(record["steps"]):
            obs, reward, terminated, truncated, info = env.step(ACTIONS[step["action"]])
            ours = (obs, reward, terminated, info["success"], info["action_is_effective"])
            expected = (step["obs"], step["reward"], step["done"], step["success"], step["effective"])
            assert ours == expected, f"seed {record['seed']} step {index}"


def test_reference_episodes_include_slips_wins_and_holes():
    # Guards the test above against a fixture that would not exercise the slip dynamics.
    steps = [s for r in reference_records("FrozenLake") for s in r["steps"]]
    assert any(s["success"] for s in steps) and any("X" in s["obs"] for s in steps)
    assert sum(not s["effective"] for s in steps) > 100


def test_symbols_for_player_in_hole_and_on_goal():
    env = make("RAGEN/FrozenLake-4x4-NoSlip-v0")
    outcomes = set()
    for seed in range(40):
        env.reset(seed=seed)
        while (action := env.optimal_action()) is not None:
            obs, reward, terminated, _, info = env.step(action)
        outcomes.add((obs.count("√"), obs.count("P"), reward, info["success"]))
    assert outcomes == {(1, 0, 1.0, True)}
    # Walk into a hole: the player shows as X, no reward, episode over.
    for seed in range(200):
        env.reset(seed=seed)
        start = env.player_state
        hole_moves = [a for a in range(4) if levels.cell(env.lake, levels.neighbour(env.lake, start, a)) == "H"]
        if hole_moves:
            obs, reward, terminated, _, info = env.step(hole_moves[0])
            assert "X" in obs and "P" not in obs and reward == 0.0 and terminated and not info["success"]
            return
    pytest.fail("no seed in 0..199 starts next to a hole")


def test_stepping_a_finished_episode_raises_and_reset_starts_over():
    env = make("RAGEN/FrozenLake-4x4-NoSlip-v0")
    first, _ = env.reset(seed=5)
    while (action := env.optimal_action()) is not None:
        obs, reward, terminated, _, _ = env.step(action)
    assert terminated and reward == 1.0
    for action in range(4):
        with pytest.raises(EpisodeFinishedError, match="call reset"):
            env.step(action)
    assert env.render() == obs  # the failed steps changed nothing
    assert env.reset(seed=5)[0] == first


def test_truncates_at_the_step_cap():
    env = FrozenLakeEnv(is_slippery=False, max_steps=3)
    for seed in range(100):
        env.reset(seed=seed)
        if env.player_state < env.size:  # top row: Up bumps the edge and is safe
            break
    results = [env.step(UP) for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True]
    assert not any(r[2] or r[4]["action_is_effective"] for r in results)


# -- determinism and RNG hygiene ---------------------------------------------------------


@pytest.mark.parametrize("env_id", LAKE_IDS)
def test_global_random_states_are_untouched(env_id):
    env_contract.assert_global_rngs_untouched(env_id, [DOWN, RIGHT, UP, LEFT] * 5)


def test_unseeded_reset_plays_the_level_of_its_drawn_seed():
    env = make()
    env.reset(seed=11)
    obs, info = env.reset()
    assert make().reset(seed=info["level_seed"])[0] == obs


# -- generator -----------------------------------------------------------------------


@pytest.mark.parametrize("size", [4, 8])
def test_generated_lakes_are_solvable_with_one_start_and_goal(size):
    holes = cells = 0
    for seed in range(300):
        lake = generate_lake(size, 0.8, seeding.np_random(seed)[0])
        flat = "".join(lake)
        assert len(lake) == size and {len(row) for row in lake} == {size}
        assert flat.count("S") == 1 and flat.count("G") == 1 and set(flat) <= set("SFHG")
        assert levels.shortest_path_length(lake, flat.index("S")) is not None
        holes += flat.count("H")
        cells += len(flat) - 2
    # Holes are drawn with probability 0.2; keeping only solvable lakes lowers that a little.
    assert 0.15 < holes / cells < 0.25


# -- value iteration and shortest paths on hand-made lakes ------------------------------

GYMNASIUM_4X4 = ("SFFF", "FHFH", "FFFH", "HFFG")


def test_value_iteration_on_gymnasiums_classic_map():
    solution = solver.solve(GYMNASIUM_4X4, slippery=True, horizon=5000)
    # The classic slippery map's optimal success probability is known to be 14/17.
    assert solution.success_probability(0) == pytest.approx(14 / 17, abs=1e-9)
    # The known optimal first moves: Left at the start (hug the wall), Up along the top row.
    assert [solution.best_action(s) for s in (0, 1, 2, 3)] == [LEFT, UP, UP, UP]


def test_value_iteration_one_cell_corridor_matches_closed_form():
    # From S, Down, Right and Up each reach G with probability 1/3 per step; Left never does.
    solution = solver.solve(("SG",), slippery=True, horizon=6)
    for steps in range(7):
        assert solution.success_probability(0, steps) == pytest.approx(1 - (2 / 3) ** steps)
    assert solution.best_action(0) != LEFT


def test_value_iteration_is_zero_when_the_goal_is_out_of_reach_in_time():
    lake = ("SFFG",)
    solution = solver.solve(lake, slippery=False, horizon=5)
    assert [solution.success_probability(0, k) for k in range(6)] == [0, 0, 0, 1, 1, 1]
    assert solution.best_action(0, steps_left=3) == RIGHT
    assert solver.solve(("SHG",), slippery=True, horizon=50).success_probability(0) == 0.0


def test_shortest_path_goes_around_holes():
    assert levels.shortest_path_length(("SFF", "HHF", "GFF"), 0) == 6
    assert levels.shortest_path_length(("SHG",), 0) is None
    assert levels.shortest_path_length(("GS",), 1) == 1


def test_slippery_transitions_follow_gymnasiums_order_and_probabilities():
    table = solver.transition_table(("SF", "FG"), slippery=True)
    # Action Down from (0,0): Left (bump, stay), Down (to 2), Right (to 1).
    assert [nxt for _, nxt in table[0][DOWN]] == [0, 2, 1]
    assert sum(p for p, _ in table[0][DOWN]) == pytest.approx(1.0)
    assert table[3][UP] == ((1.0, 3),)  # the goal is absorbing
    assert [solver.sample_outcome(table[0][DOWN], u) for u in (0.0, 0.34, 0.67, 0.999)] == [0, 2, 1, 1]


# -- the optimal agent ---------------------------------------------------------------


def test_optimal_agent_walks_the_shortest_path_without_slips():
    env = make("RAGEN/FrozenLake-4x4-NoSlip-v0")
    for seed in range(100):
        _, reset_info = env.reset(seed=seed)
        assert env.optimal_success_prob == 1.0
        steps = 0
        while (action := env.optimal_action()) is not None:
            *_, info = env.step(action)
            steps += 1
        assert info["success"] and steps == reset_info["optimal_length"]


def test_optimal_agent_success_rate_matches_value_iteration_on_slippery_ice():
    env = make("RAGEN/FrozenLake-4x4-v0", solve_on_reset=True)
    predicted, wins, random_wins = [], 0, 0
    rng = np.random.default_rng(0)
    seeds = range(600)
    for seed in seeds:
        _, info = env.reset(seed=seed)
        predicted.append(info["optimal_success_prob"])
        while (action := env.optimal_action()) is not None:
            _, _, terminated, truncated, info = env.step(action)
            if truncated:
                break
        wins += info["success"]
        env.reset(seed=seed)
        for _ in range(env.max_steps):
            _, _, terminated, truncated, info = env.step(int(rng.integers(4)))
            if terminated or truncated:
                break
        random_wins += info["success"]
    expected = float(np.sum(predicted))
    spread = float(np.sqrt(np.sum(np.multiply(predicted, np.subtract(1, predicted)))))
    assert abs(wins - expected) < 4 * spread + 1
    assert wins > random_wins + 100


# -- the solver runs only when asked -----------------------------------------------------


def _count_value_iterations(monkeypatch) -> list[int]:
    calls = [0]
    original = solver._value_iteration

    def counting(*args):
        calls[0] += 1
        return original(*args)

    monkeypatch.setattr(solver, "_value_iteration", counting)
    return calls


@pytest.mark.parametrize("env_id", LAKE_IDS)
def test_reset_and_step_run_no_value_iteration(monkeypatch, env_id):
    solves = _count_value_iterations(monkeypatch)
    env = make(env_id)
    for seed in range(50_000, 50_050):
        _, info = env.reset(seed=seed)
        assert "optimal_success_prob" not in info and info["optimal_length"] >= 1
        for action in (DOWN, RIGHT, DOWN, RIGHT):
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break
    assert solves[0] == 0


def test_value_iteration_runs_once_per_lake_when_asked(monkeypatch):
    # An empty cache: lakes solved by earlier tests (other seeds can draw the same lake) would hit it.
    monkeypatch.setattr(solver, "_cache", type(solver._cache)())
    monkeypatch.setattr(solver, "_cache_bytes", 0)
    solves = _count_value_iterations(monkeypatch)
    eager, lazy = make(solve_on_reset=True), make()
    seeds = range(60_000, 60_020)
    for seed in seeds:
        _, info = eager.reset(seed=seed)
        lazy.reset(seed=seed)  # the same lake: served from the cache
        assert lazy.optimal_success_prob == info["optimal_success_prob"]
        assert lazy.optimal_action() == eager.optimal_action()
        assert 0.0 < info["optimal_success_prob"] <= 1.0
    assert solves[0] == len(seeds)
    for seed in seeds:  # again: every lake is cached
        lazy.reset(seed=seed)
        lazy.optimal_action()
    assert solves[0] == len(seeds)


def test_solutions_are_shared_read_only_and_bounded(monkeypatch):
    env = make()
    env.reset(seed=3)
    solution = env._solution
    assert copy.deepcopy(env)._solution is solution  # copies (the optimal agent's look-ahead) share it
    with pytest.raises(ValueError):
        solution.values[0, 0] = 0.5
    monkeypatch.setattr(solver, "CACHE_BYTES", 3 * solution.values.nbytes)  # room for one solution
    monkeypatch.setattr(solver, "_cache", type(solver._cache)())
    monkeypatch.setattr(solver, "_cache_bytes", 0)
    first = solver.solve(GYMNASIUM_4X4, True, 100)
    assert solver.solve(GYMNASIUM_4X4, True, 100) is first
    solver.solve(GYMNASIUM_4X4, False, 100)  # evicts the first
    assert len(solver._cache) == 1 and solver.solve(GYMNASIUM_4X4, True, 100) is not first


def test_optimal_success_prob_needs_a_reset():
    with pytest.raises(ResetNeededError):
        FrozenLakeEnv().optimal_success_prob
