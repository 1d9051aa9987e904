"""2048: RAGEN-2 fidelity, the rules, the Gymnasium contract, determinism, the search."""

from __future__ import annotations

import hashlib
import json
import math

import gymnasium
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragen_bench
from ragen_bench.chat import AgentReply, ChatConfig, ChatEpisode
from ragen_bench.eval import run_eval
from ragen_bench.eval.compose import compose_config
from ragen_bench.envs.base import EpisodeFinishedError, InvalidActionError
from ragen_bench.envs.game_2048 import Game2048Env, board as rules, search
from ragen_bench.envs.game_2048.draws import PCG64Draws
from ragen_bench.envs.game_2048.env import log_reward
from ragen_bench.registry import entry
from tests import env_contract
from tests.benchmarks.ragen2_game_2048 import game_2048_env
from tests.conftest import ragen2_records

IDS = [i for i in ragen_bench.ENV_IDS if i.startswith("RAGEN/2048-")]
UP, RIGHT, DOWN, LEFT = range(4)
# The info keys RAGEN-2's Game2048Env returns (max_tile: on the final step only).
RAGEN2_STEP_KEYS = ("action_is_effective", "action_is_valid", "success", "grid", "action_mask", "score", "raw_reward")
RAGEN2_RESET_KEYS = ("grid", "score", "action_mask", "raw_reward")


def make(env_id: str = "RAGEN/2048-v0", **kwargs) -> Game2048Env:
    return gymnasium.make(env_id, **kwargs).unwrapped


def reference_records() -> tuple[dict, ...]:
    """RAGEN-2's recorded episodes (scripts/ragen2_reference/game_2048.py)."""
    return ragen2_records("game_2048")


def plain(value):
    return value.tolist() if isinstance(value, np.ndarray) else value


def ragen2_fields(info: dict, keys: tuple[str, ...]) -> dict:
    return {key: plain(info[key]) for key in keys}


def board_of(rows: list[list[int]]) -> rules.Board:
    return tuple(tuple(row) for row in rows)


def set_board(env: Game2048Env, rows: list[list[int]]) -> None:
    """Put ``env`` (already reset) on a hand-made grid, for end-of-game positions no short game reaches."""
    env._set_board(board_of(rows))


def test_ids_and_ragen2_names():
    assert IDS == ["RAGEN/2048-v0", "RAGEN/2048-RawReward-v0"]
    assert entry("RAGEN/2048-v0").ragen_name == "game_2048"
    assert entry("RAGEN/2048-v0").family == "game_2048"
    assert Game2048Env.action_names == ("Up", "Right", "Down", "Left")


# -- fidelity to RAGEN-2 ------------------------------------------------------------


def _replay(env: Game2048Env, record: dict, rewards_from: str) -> None:
    seed = record["seed"]
    obs, info = env.reset(seed=seed)
    assert obs == record["obs"], f"seed {seed}: reset observation differs"
    assert ragen2_fields(info, RAGEN2_RESET_KEYS) == record["info"], f"seed {seed}: reset info differs"
    for index, step in enumerate(record["steps"]):
        obs, reward, terminated, truncated, info = env.step(step["action"])
        where = f"seed {seed} step {index}"
        if "obs" in step:
            assert obs == step["obs"], where
        else:
            assert hashlib.sha256(obs.encode()).hexdigest()[:16] == step["obs_sha256_16"], where
        expected_reward = step["reward"] if rewards_from == "reward" else step["info"]["raw_reward"]
        assert (reward, terminated, truncated) == (expected_reward, step["done"], False), where
        assert ragen2_fields(info, RAGEN2_STEP_KEYS) == {key: step["info"][key] for key in RAGEN2_STEP_KEYS}, where
        if "max_tile" in step["info"]:
            assert info["max_tile"] == step["info"]["max_tile"], where


def test_episodes_match_ragen2_reference_exactly():
    records = reference_records()
    assert sorted(r["seed"] for r in records) == sorted(set(range(100)) | set(range(123, 379)))
    env = make()
    for record in records:
        _replay(env, record, rewards_from="reward")


def test_raw_reward_id_pays_ragen2s_raw_reward():
    # RAGEN-2 with use_log_reward=False returns its raw_reward as the reward.
    env = make("RAGEN/2048-RawReward-v0")
    for record in reference_records()[:60]:
        _replay(env, record, rewards_from="raw_reward")


@pytest.mark.parametrize("env_id", IDS)
@given(seed=st.integers(0, 2**32 - 1), actions=st.lists(st.integers(0, 3), min_size=1, max_size=400))
@settings(max_examples=40, deadline=None)
def test_live_ragen2_env_agrees_on_any_seed_and_moves(env_id, seed, actions):
    """RAGEN-2's own env (from RAGEN2_CHECKOUT; skips without it) on random seeds and move sequences."""
    peer = game_2048_env(env_id)
    ours = make(env_id)
    obs, info = ours.reset(seed=seed)
    peer_obs, peer_info = peer.reset(seed=seed)
    assert obs == peer_obs and ragen2_fields(info, RAGEN2_RESET_KEYS) == ragen2_fields(peer_info, RAGEN2_RESET_KEYS)
    for action in actions:
        obs, reward, terminated, truncated, info = ours.step(action)
        peer_obs, peer_reward, done, peer_info = peer.step(action)
        assert (obs, reward, terminated) == (peer_obs, peer_reward, done)
        assert ragen2_fields(info, RAGEN2_STEP_KEYS) == ragen2_fields(peer_info, RAGEN2_STEP_KEYS)
        if done:
            assert info["max_tile"] == peer_info["max_tile"]
            break


def test_reference_episodes_cover_invalid_moves_merges_fours_and_game_over():
    # Guards the replay above against a fixture that would not exercise the rules.
    steps = [s for r in reference_records() for s in r["steps"]]
    assert sum(not s["info"]["action_is_valid"] for s in steps) > 1000
    assert sum(s["info"]["raw_reward"] > 0 for s in steps) > 5000
    assert any(4 in row for s in steps for row in s["info"]["grid"])
    finished = [s for s in steps if s["done"]]
    assert len(finished) == 100 and all("max_tile" in s["info"] and not any(s["info"]["action_mask"]) for s in finished)


# -- rules ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, slid, gained",
    [
        ((2, 2, 2, 2), (4, 4, 0, 0), 8),  # pairs from the leading side
        ((2, 2, 4, 0), (4, 4, 0, 0), 4),  # a merged tile does not merge again
        ((0, 4, 2, 2), (4, 4, 0, 0), 4),
        ((2, 0, 0, 2), (4, 0, 0, 0), 4),
        ((4, 2, 4, 2), (4, 2, 4, 2), 0),
        ((8, 8, 16, 16), (16, 32, 0, 0), 48),
    ],
)
def test_slide_merges_each_pair_once_from_the_leading_side(line, slid, gained):
    assert rules.slide(line) == (slid, gained)
    assert rules.slide_back(line[::-1]) == (slid[::-1], gained)


# Up to 16384: a merge of two stays within the search's 4-bit exponents (see env.MAX_STEPS_LIMIT).
tiles = st.sampled_from([0, 0, 0, 2, 2, 4, 8, 16, 32, 64, 1024, 16384])
boards = st.lists(st.lists(tiles, min_size=4, max_size=4), min_size=4, max_size=4).map(board_of)


@given(boards)
@settings(max_examples=300, deadline=None)
def test_moves_keep_the_tile_sum_and_agree_with_symmetry_and_the_search(board):
    moved = [rules.move(board, action) for action in rules.ACTIONS]
    total = sum(map(sum, board))
    mirrored = tuple(line[::-1] for line in board)
    for action, (after, gained) in enumerate(moved):
        assert sum(map(sum, after)) == total
        assert gained % 4 == 0 and gained <= 2 * total
    # Right is Left of the mirrored board, Up is Left of the transposed board.
    left_of_mirror = rules.move(mirrored, LEFT)[0]
    assert moved[RIGHT][0] == tuple(line[::-1] for line in left_of_mirror)
    assert moved[UP][0] == rules.transpose(rules.move(rules.transpose(board), LEFT)[0])
    assert rules.valid_actions(board) == tuple(a for a, (after, _) in enumerate(moved) if after != board)
    # The search's packed boards move as the env's boards.
    packed = search.moves(np.array([search.encode(board)], dtype=np.uint64))[:, 0]
    assert [search.encode(after) for after, _ in moved] == packed.tolist()


def test_invalid_move_changes_nothing_and_costs_what_ragen2_charges():
    for env_id, penalty in (("RAGEN/2048-v0", 0.0), ("RAGEN/2048-RawReward-v0", -0.1)):
        env = make(env_id)
        env.reset(seed=0)
        set_board(env, [[2, 4, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
        assert env.valid_actions == (RIGHT, DOWN)
        before = env.render()
        obs, reward, terminated, truncated, info = env.step(UP)
        assert obs == before and reward == penalty and not (terminated or truncated)
        assert not info["action_is_valid"] and not info["action_is_effective"] and info["raw_reward"] == -0.1


def test_log_reward_formula():
    assert log_reward(4.0) == 0.1 * math.log2(5.0)
    assert log_reward(0.0) == 0.0 and log_reward(-0.1) == 0.0


def test_game_over_ends_the_episode_and_success_needs_a_2048_tile():
    env = make()
    for top, success in ((1024, False), (2048, True)):
        env.reset(seed=0)
        # Left merges the 2s and the spawn fills the only empty cell: no move is left.
        set_board(env, [[2, 2, 8, 16], [32, 64, 128, 256], [4, 8, 16, 32], [64, 128, 256, top]])
        obs, reward, terminated, truncated, info = env.step(LEFT)
        assert terminated and not truncated and info["success"] is success and info["max_tile"] == top
        assert "Valid Actions: None." in obs and not info["action_mask"].any()
        assert env.optimal_action() is None
        with pytest.raises(EpisodeFinishedError):
            env.step(UP)


def test_a_2048_tile_before_the_end_is_not_success():
    env = make()
    env.reset(seed=0)
    set_board(env, [[1024, 1024, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    obs, reward, terminated, truncated, info = env.step(LEFT)
    assert info["max_tile"] == 2048 and info["raw_reward"] == 2048.0 and not terminated and not info["success"]


def test_truncates_after_max_steps_invalid_moves_included():
    env = make(max_steps=3)
    env.reset(seed=0)
    set_board(env, [[2, 4, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    results = [env.step(UP)[3] for _ in range(3)]  # three moves that move nothing
    assert results == [False, False, True]
    with pytest.raises(EpisodeFinishedError):
        env.step(UP)


# -- contract ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "action", [True, np.bool_(False), 1.5, "1", "Up", -1, 4, np.float32(1.0), None, [0], 2**70]
)
def test_bad_actions_raise_a_clear_error(action):
    env = make()
    env.reset(seed=0)
    with pytest.raises(InvalidActionError, match=r"Game2048Env: invalid action .* expected an int in 0\.\.3"):
        env.step(action)


def test_seeds_are_the_ones_ragen2_accepts():
    env = make()
    env.reset(seed=2**32 - 1)
    with pytest.raises(ValueError, match=r"seed must be in 0\.\.4294967295"):
        env.reset(seed=2**32)


def test_numpy_integer_actions_are_accepted():
    env, twin = make(), make()
    env.reset(seed=5)
    twin.reset(seed=5)
    assert repr(env.step(np.int64(3))) == repr(twin.step(3))


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"size": 2.5}, TypeError),
        ({"size": 1}, ValueError),
        ({"two_prob": 1.5}, ValueError),
        ({"two_prob": "0.9"}, TypeError),
        ({"log_reward": 1}, TypeError),
        ({"max_steps": 0}, ValueError),
        ({"max_steps": 16_001}, ValueError),
    ],
)
def test_bad_arguments_raise_at_construction(kwargs, error):
    with pytest.raises(error, match="Game2048Env: " + next(iter(kwargs))):
        Game2048Env(**kwargs)


@pytest.mark.parametrize("env_id", IDS)
def test_global_random_states_are_untouched(env_id):
    env_contract.assert_global_rngs_untouched(env_id, [0, 1, 2, 3])


def test_unseeded_reset_plays_the_episode_of_its_drawn_seed():
    env, twin = make(), make()
    env.reset(seed=3)
    for _ in range(3):
        obs, info = env.reset()
        assert twin.reset(seed=info["level_seed"])[0] == obs
        for action in (0, 1, 2, 3, 0, 3):
            assert repr(env.step(action)) == repr(twin.step(action))


def test_other_sizes_play_by_the_same_rules():
    env = make(size=3)
    obs, info = env.reset(seed=1)
    assert info["grid"].shape == (3, 3) and obs.count("Row ") == 3
    assert env.optimal_action() is None  # the search packs 4x4 grids only


def test_chat_layer_parses_action_names_with_the_usual_format_penalty():
    env = gymnasium.make("RAGEN/2048-v0")
    episode = ChatEpisode(env, ChatConfig(), env_id="RAGEN/2048-v0", seed=0)
    episode.reset()
    episode.step(AgentReply("<think>ok</think><answer>left || Jump || UP</answer>"))
    turn = episode.trajectory().turns[0]
    assert turn.action_ids == [LEFT, UP] and not turn.valid and turn.format_penalty == pytest.approx(-0.1)


# -- the search ----------------------------------------------------------------------


def test_search_plays_a_whole_capped_game_well():
    env = make()
    env.reset(seed=123)
    steps = 0
    while True:
        action = env.optimal_action()
        assert action in env.valid_actions
        obs, reward, terminated, truncated, info = env.step(action)
        steps += 1
        if terminated or truncated:
            break
    # 700 moves bring a tile sum near 1,550: a sound policy survives them and builds a 512 or more.
    assert truncated and steps == 700 and info["max_tile"] >= 512


@given(boards)
@settings(max_examples=100, deadline=None)
def test_search_picks_a_valid_move_on_any_grid(board):
    valid = rules.valid_actions(board)
    if valid:
        assert search.best_action(board, valid) in valid


# -- the spawn's draws ---------------------------------------------------------------


@given(
    st.integers(0, 2**64 - 1),
    st.lists(st.one_of(st.none(), st.integers(1, 64), st.integers(1, 2**32 - 1)), max_size=60),
)
@settings(max_examples=300, deadline=None)
def test_spawn_draws_are_numpys_generator_draws(seed, calls):
    # None: random(); n: integers(0, n).  Large n makes Lemire's rejection loop run.
    numpy_generator = np.random.default_rng(seed)
    draws = PCG64Draws()
    draws.restart(np.random.default_rng(seed).bit_generator.state)
    for n in calls:
        if n is None:
            assert draws.random() == numpy_generator.random()
        else:
            assert draws.integers(n) == numpy_generator.integers(0, n)


# -- through ragen-bench eval ----------------------------------------------------------


def _replayed_max_tile(record: dict) -> int:
    """The final max tile of a recorded episode, replayed from its actions."""
    env = make(record["env_id"])
    env.reset(seed=record["seed"])
    info = {"max_tile": env.grid.max()}
    for turn in record["turns"]:
        for action in turn["action_ids"]:
            info = env.step(action)[4]
    return info["max_tile"]


@pytest.mark.parametrize("env_id", IDS)
def test_eval_plays_the_search_and_random_agents(tmp_path, env_id):
    budget = ["chat.max_turns=150", "chat.max_actions_per_turn=1", "chat.max_actions_per_episode=150"]
    tiles = {}
    for agent in ("optimal", "random"):
        out = tmp_path / agent
        run_eval(compose_config("eval", [f"env={env_id}", f"agent={agent}", "limit=3", f"out={out}", "progress=false", *budget]))
        records = [json.loads(line) for line in (out / "episodes.jsonl").read_text(encoding="utf-8").splitlines()]
        assert sorted(r["seed"] for r in records) == [123, 124, 125] and not any(r["success"] for r in records)
        tiles[agent] = [_replayed_max_tile(r) for r in records]
        if agent == "optimal":  # every move of the search changes the grid, and it never dies this early
            assert all(r["num_actions"] == r["num_effective_actions"] == 150 for r in records)
    # 150 moves bring a tile sum near 330: the search builds a 128 or 256, random play rarely a 128.
    assert min(tiles["optimal"]) >= 128 and sum(tiles["optimal"]) > sum(tiles["random"])
