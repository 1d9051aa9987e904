"""RAGEN-2's 2x2 Rubik's cube: fidelity to RAGEN-2's recorded episodes, the turns, the solver, the contract."""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
from functools import cache
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragen_bench
from ragen_bench import panels
from ragen_bench.chat import ChatConfig
from ragen_bench.chat.episode import ChatEpisode
from ragen_bench.chat.protocol import AgentReply
from ragen_bench.envs.base import EpisodeFinishedError, InvalidActionError, ResetNeededError
from ragen_bench.envs.rubikscube import RubiksCubeEnv, cube, solver
from ragen_bench.registry import entry
from tests import env_contract

CUBE_IDS = [i for i in ragen_bench.ENV_IDS if i.startswith("RAGEN/RubiksCube-")]
FIXTURE = Path(__file__).parent / "fixtures" / "ragen2" / "rubikscube.jsonl.gz"
ACTIONS = {name: index for index, name in enumerate(cube.ACTION_NAMES)}
turn_ids = st.lists(st.integers(0, len(cube.ACTION_NAMES) - 1), max_size=12)


@cache
def records() -> tuple[dict, ...]:
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as lines:
        return tuple(json.loads(line) for line in lines)


def apply(colours: bytes, actions) -> bytes:
    for action in actions:
        colours = cube.turn(colours, action)
    return colours


def inverse(action: int) -> int:
    return action ^ 1  # U <-> U', D <-> D', ...


def test_ids_cover_depths_1_3_5_and_name_ragen2s_config():
    depths = {entry(env_id).kwargs["scramble_depth"]: env_id for env_id in CUBE_IDS}
    assert set(depths) >= {1, 3, 5}
    assert entry(depths[1]).ragen_name == "rubikscube"  # config/envs.yaml: scramble_depth 1, max_steps 20
    assert {entry(env_id).kwargs["max_steps"] for env_id in CUBE_IDS} == {20}
    assert RubiksCubeEnv.action_names == ("U", "U'", "D", "D'", "L", "L'", "R", "R'", "F", "F'", "B", "B'")


# -- fidelity to RAGEN-2 ------------------------------------------------------------------


def test_scrambles_turns_and_nets_match_ragen2_reference_exactly():
    assert len(records()) == 3 * 356
    envs = {depth: RubiksCubeEnv(scramble_depth=depth, max_steps=20) for depth in (1, 3, 5)}
    for record in records():
        env, where = envs[record["scramble_depth"]], f"depth {record['scramble_depth']} seed {record['seed']}"
        observation, _ = env.reset(seed=record["seed"])
        assert observation == record["obs"], where
        for index, step in enumerate(record["steps"]):
            observation, reward, terminated, truncated, info = env.step(ACTIONS[step["action"]])
            ours = (
                hashlib.sha256(observation.encode()).hexdigest(),
                reward,
                terminated or truncated,
                {key: info[key] for key in step["info"]},
            )
            assert ours == (step["obs_sha256"], step["reward"], step["done"], step["info"]), f"{where} step {index}"
        assert observation == record["steps"][-1]["obs"], where
        assert env.episode_finished


def test_reference_episodes_include_solves_and_truncations():
    # Guards the test above against a fixture that never ends either way.
    last = [record["steps"][-1] for record in records()]
    solved = [step for step in last if step["info"]["success"]]
    assert len(solved) > 900 and all(step["reward"] == 1.0 and "Cube Solved!" in step["obs"] for step in solved)
    assert sum("Max steps reached." in step["obs"] for step in last) >= 100


def test_test_panel_seeds_are_in_the_reference():
    for env_id in CUBE_IDS:
        depth = entry(env_id).kwargs["scramble_depth"]
        recorded = {record["seed"] for record in records() if record["scramble_depth"] == depth}
        assert set(panels.load(env_id, "test").seeds) <= recorded


def test_scramble_draws_numpys_integers_exactly():
    for seed in range(2000):
        reference = np.random.default_rng(seed)
        expected = tuple(int(reference.integers(1, 13)) - 1 for _ in range(10))
        turns, state = cube.scramble(np.random.default_rng(seed), 10)
        assert turns == expected and cube.colours_of(state) == apply(cube.SOLVED, expected)


def test_scramble_skips_words_numpy_rejects():
    # A 32-bit word w is rejected when (12 * w) mod 2**32 < 4: w = 0 is one such word.
    class Words:
        def __init__(self, words):
            self.words = iter(words)

        def random_raw(self, count=None):
            if count is None:
                return next(self.words)
            return np.array([next(self.words) for _ in range(count)], dtype=np.uint64)

    class Stub:
        # Low half 0: rejected; high half 2**31 + 1: turn 6; then the next word's low half: turn 11.
        bit_generator = Words([(2**31 + 1) << 32, 2**32 - 1])

    assert cube.scramble(Stub(), 2) == ((6, 11), cube.table(apply(cube.SOLVED, (6, 11))))


# -- the turns ------------------------------------------------------------------------------


@given(turn_ids)
def test_turns_permute_stickers_and_primes_undo_them(actions):
    colours = apply(cube.SOLVED, actions)
    assert sorted(colours) == sorted(cube.SOLVED)
    assert apply(colours, [inverse(a) for a in reversed(actions)]) == cube.SOLVED
    for action in range(12):
        assert cube.turn(cube.turn(colours, action), inverse(action)) == colours
        assert apply(colours, [action] * 4) == colours


def test_opposite_faces_commute_and_u_d_prime_turns_the_whole_solved_cube():
    probe = bytes(range(24))  # distinct stickers: permutations, not colourings
    for face, opposite in ((0, 2), (4, 6), (8, 10)):  # U/D, L/R, F/B
        assert apply(probe, [face, opposite]) == apply(probe, [opposite, face])
    rotated = apply(cube.SOLVED, [ACTIONS["U"], ACTIONS["D'"]])
    assert rotated != cube.SOLVED and rotated in cube.SOLVED_SET


def test_b_is_ragen2s_turn_not_a_physical_one():
    # A physical B would carry the Left stickers of the back corners to D22 (from L4) and D23
    # (from L6); RAGEN-2's sends them the other way round, as cube.py documents.
    probe = bytes(range(24))
    turned = cube.turn(probe, ACTIONS["B"])
    assert (turned[22], turned[23]) == (6, 4)
    assert (turned[13], turned[15]) == (22, 23)


def test_solved_set_is_every_face_one_colour():
    assert len(cube.SOLVED_SET) == 720 and cube.SOLVED in cube.SOLVED_SET
    for colours in cube.SOLVED_SET:
        assert all(len(set(colours[4 * face : 4 * face + 4])) == 1 for face in range(6))


@given(turn_ids, st.permutations(list(cube.COLOURS)))
def test_canonical_form_ignores_colour_names(actions, renamed):
    colours = apply(cube.SOLVED, actions)
    relabelled = colours.translate(bytes.maketrans(cube.COLOURS, bytes(renamed)))
    assert cube.canonical(relabelled) == cube.canonical(colours)
    assert (relabelled in cube.SOLVED_SET) == (colours in cube.SOLVED_SET)


# -- the solver -----------------------------------------------------------------------------


def _solvable_within(colours: bytes, turns: int) -> bool:
    """Brute force over every turn sequence, no table, no renaming."""
    layer = {colours}
    for _ in range(turns):
        layer = {cube.turn(state, action) for state in layer for action in range(12)}
        if layer & cube.SOLVED_SET:
            return True
    return False


@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5])
def test_optimal_length_is_the_brute_force_distance(depth):
    env = RubiksCubeEnv(scramble_depth=depth)
    for seed in range(40 if depth < 5 else 8):
        _, info = env.reset(seed=seed)
        length = info["optimal_length"]
        assert length <= max(depth, 2) and length % 2 == depth % 2
        if env.stickers in cube.SOLVED_SET:
            assert length == 2
            continue
        assert _solvable_within(env.stickers, length) and not _solvable_within(env.stickers, length - 1)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 11), min_size=1, max_size=7))
def test_plans_solve_and_are_no_longer_than_the_scramble(actions):
    colours = apply(cube.SOLVED, actions)
    plan = solver.plan(colours)
    assert len(plan) <= max(len(actions), 2) and len(plan) == solver.optimal_length(colours)
    states = list(itertools.accumulate(plan, cube.turn, initial=colours))
    assert states[-1] in cube.SOLVED_SET and not any(state in cube.SOLVED_SET for state in states[1:-1])


def test_meet_in_the_middle_agrees_with_the_full_table(monkeypatch):
    # Depth-5 scrambles against a depth-2 table: the forward search must find every distance.
    full = {seed: RubiksCubeEnv(scramble_depth=5).reset(seed=seed)[1]["optimal_length"] for seed in range(60)}
    monkeypatch.setattr(solver, "TABLE_DEPTH", 2)
    solver.distance_table.cache_clear()
    solver._plan.cache_clear()
    try:
        small = {seed: RubiksCubeEnv(scramble_depth=5).reset(seed=seed)[1]["optimal_length"] for seed in range(60)}
        assert len(solver.distance_table()) == 42
    finally:
        solver.distance_table.cache_clear()
        solver._plan.cache_clear()
    assert small == full and set(full.values()) == {1, 3, 5}


def test_deepest_scrambles_are_solved_exactly():
    env = RubiksCubeEnv(scramble_depth=solver.MAX_DISTANCE, max_steps=20)
    lengths = []
    for seed in range(3):
        _, info = env.reset(seed=seed)
        lengths.append(info["optimal_length"])
        plan = env.optimal_plan(20)
        assert len(plan) == info["optimal_length"] and apply(env.stickers, plan) in cube.SOLVED_SET
    assert max(lengths) >= 6  # beyond the table: the forward search ran


def test_a_state_beyond_the_search_raises(monkeypatch):
    env = RubiksCubeEnv(scramble_depth=7)
    seed = next(seed for seed in range(100) if env.reset(seed=seed)[1]["optimal_length"] == 7)
    env.reset(seed=seed)
    monkeypatch.setattr(solver, "MAX_FORWARD_DEPTH", 1)  # reaches 1 + 5 turns only
    with pytest.raises(solver.DistanceTooLarge, match="more than"):
        solver._plan.__wrapped__(cube.canonical(env.stickers))


def test_distance_table_is_built_on_first_use_not_at_import():
    code = (
        "import gymnasium, ragen_bench\n"
        "from ragen_bench.envs.rubikscube import solver\n"
        "env = gymnasium.make('RAGEN/RubiksCube-2x2-Depth5-v0')\n"
        "print(solver.distance_table.cache_info().currsize)\n"
        "env.reset(seed=0)\n"
        "print(solver.distance_table.cache_info().currsize, len(solver.distance_table()))\n"
    )
    from tests.conftest import run_python

    assert run_python(code).split() == ["0", "1", "16149"]


# -- the optimal agent and the episode -------------------------------------------------------


@pytest.mark.parametrize("env_id", CUBE_IDS)
def test_optimal_agent_solves_every_test_seed_in_its_optimal_length(env_id):
    env = gymnasium.make(env_id).unwrapped
    panel = panels.load(env_id, "test")
    for seed, length in zip(panel.seeds, panel.optimal_length):
        _, info = env.reset(seed=seed)
        assert info["optimal_length"] == length
        steps = 0
        while (action := env.optimal_action()) is not None:
            _, reward, terminated, truncated, info = env.step(action)
            steps += 1
        assert terminated and reward == 1.0 and info["success"] and steps == length, seed


def test_an_even_depth_can_start_solved_and_then_takes_two_turns():
    env = RubiksCubeEnv(scramble_depth=2)
    seed = next(seed for seed in range(2000) if env.reset(seed=seed) and env.stickers in cube.SOLVED_SET)
    _, info = env.reset(seed=seed)
    assert info["optimal_length"] == 2 and info["success"] is False
    assert env.optimal_plan(5) == list(solver.SOLVED_START_PLAN)
    assert not env.step(0)[2]
    assert env.step(1)[2]


def test_plan_is_followed_and_recomputed_after_a_detour():
    env = RubiksCubeEnv(scramble_depth=5)
    env.reset(seed=2)
    plan = env.optimal_plan(10)
    env.step(plan[0])
    assert env.optimal_plan(10) == plan[1:]
    detour = next(a for a in range(12) if a != plan[1])
    env.step(detour)
    assert env.optimal_plan(10) == list(solver.plan(env.stickers))
    assert env.optimal_action(steps_left=0) is None


def test_truncates_at_the_step_cap_with_ragen2s_message():
    env = RubiksCubeEnv(scramble_depth=5, max_steps=3)
    env.reset(seed=4)
    results = [env.step(ACTIONS["U"]) for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True] and not any(r[2] for r in results)
    assert results[-1][0].endswith("=== Game Over: Max steps reached. ===") and "Step: 3/3" in results[-1][0]
    with pytest.raises(EpisodeFinishedError, match="call reset"):
        env.step(0)
    assert env.render() == results[-1][0] and env.optimal_action() is None


def test_stickers_are_readable_state_for_drawing():
    env = RubiksCubeEnv()
    env.reset(seed=0)
    colours = env.sticker_colours
    assert colours.shape == (6, 2, 2) and colours.dtype == np.uint8
    assert np.bincount(colours.ravel(), minlength=6).tolist() == [4] * 6
    assert bytes(cube.COLOURS[i] for i in colours.ravel()) == env.stickers


# -- contract: actions, arguments, determinism -------------------------------------------------


@pytest.mark.parametrize("action", [True, np.bool_(False), 12, -1, 1.0, np.float32(2), "U", "U'", None, [0], b"\x00"])
def test_bad_actions_raise_a_clear_error_and_change_nothing(action):
    env = RubiksCubeEnv()
    before, _ = env.reset(seed=9)
    with pytest.raises(InvalidActionError, match=r"RubiksCubeEnv: invalid action .*expected an int in 0\.\.11"):
        env.step(action)
    assert env.render() == before
    assert env.step(np.int64(3))[0] != before  # numpy integers are fine


def test_step_and_render_before_reset_raise():
    env = RubiksCubeEnv()
    with pytest.raises(ResetNeededError):
        env.step(0)
    with pytest.raises(ResetNeededError):
        env.render()
    assert env.optimal_action() is None


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"scramble_depth": 0}, ValueError),
        ({"scramble_depth": solver.MAX_DISTANCE + 1}, ValueError),
        ({"scramble_depth": 2.0}, TypeError),
        ({"scramble_depth": True}, TypeError),
        ({"max_steps": 0}, ValueError),
        ({"max_steps": "20"}, TypeError),
        ({"render_mode": "human"}, ValueError),
    ],
)
def test_bad_arguments_raise_at_construction(kwargs, error):
    with pytest.raises(error, match="RubiksCubeEnv"):
        RubiksCubeEnv(**kwargs)


def test_hostile_reply_text_goes_through_the_chat_parser_with_the_format_penalty():
    env = gymnasium.make("RAGEN/RubiksCube-2x2-Depth1-v0")
    episode = ChatEpisode(env, ChatConfig(max_actions_per_turn=6), env_id="RAGEN/RubiksCube-2x2-Depth1-v0", seed=3)
    episode.reset()
    assert "U, U', D, D', L, L', R, R', F, F', B, B'" in episode.messages[1]["content"]
    # Lower case is the same name (as RAGEN-2's lower-cased lookup); a curly prime, a fullwidth
    # letter, a double turn and control characters are not names.
    episode.step(AgentReply("<think>x</think><answer>u' || U\u2019 || \uff35 || R2 || \x00B || d</answer>"))
    turn = episode.trajectory().turns[0]
    assert turn.action_ids == [ACTIONS["U'"], ACTIONS["D"]]
    assert not turn.valid and turn.format_penalty == pytest.approx(ChatConfig().format_penalty)
    solved = gymnasium.make("RAGEN/RubiksCube-2x2-Depth1-v0").unwrapped
    solved.reset(seed=4)
    episode = ChatEpisode(solved, ChatConfig(), env_id="RAGEN/RubiksCube-2x2-Depth1-v0", seed=4)
    episode.reset()
    episode.step(AgentReply(f"<think>x</think><answer>{cube.ACTION_NAMES[solved.optimal_action()]}</answer>"))
    assert episode.done and episode.trajectory().success and episode.trajectory().turns[0].format_penalty == 0.0


@pytest.mark.parametrize("env_id", CUBE_IDS)
def test_global_random_states_are_untouched(env_id):
    env_contract.assert_global_rngs_untouched(env_id, [0, 3, 6, 9] * 6)


def test_unseeded_reset_plays_the_scramble_of_its_drawn_seed():
    env = RubiksCubeEnv()
    env.reset(seed=11)
    observation, info = env.reset()
    assert RubiksCubeEnv().reset(seed=info["level_seed"]) == (observation, info)


def test_scramble_is_kept_for_the_episode():
    env = RubiksCubeEnv(scramble_depth=5)
    env.reset(seed=0)
    assert env.scramble == (10, 7, 6, 3, 3)  # B R' R D' D', as the card shows
    assert env.stickers == apply(cube.SOLVED, env.scramble)
