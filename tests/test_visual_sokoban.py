"""RAGEN-2's ``VisualSimpleSokoban`` as ``RAGEN/Sokoban-6x6-Visual-v0``: Sokoban-6x6's episodes, with a frame.

RAGEN-2's tag is ``SimpleSokoban`` with ``render_mode: "rgb_array"``: the agent is shown
gym-sokoban's sprite picture of the room instead of the text grid.  Our id keeps the text
grid as its observation (the chat layer, replay verification and text agents work
unchanged) and draws its own frame of the same shape with ``render()``.  The episodes are
exact: the fixture (``tests/fixtures/ragen2/visual_sokoban.jsonl.gz``, recorded from
RAGEN-2's own env by ``scripts/ragen2_reference/visual_sokoban.py``) holds RAGEN-2's text
view of every state, the frame's shape, rewards, done flags and info.
"""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from pathlib import Path

import gymnasium
import numpy as np
import pytest

from ragen_bench import panels
from ragen_bench.chat import AgentReply, ChatConfig, ChatEpisode
from ragen_bench.registry import entry

VISUAL, TEXT = "RAGEN/Sokoban-6x6-Visual-v0", "RAGEN/Sokoban-6x6-v0"
FIXTURE = Path(__file__).parent / "fixtures" / "ragen2" / "visual_sokoban.jsonl.gz"
RECORDED_SEEDS = sorted(set(range(100)) | set(range(123, 379)))


@lru_cache(maxsize=1)
def records() -> tuple[dict, ...]:
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as lines:
        return tuple(json.loads(line) for line in lines)


def test_the_id_is_sokoban_6x6_with_pictures():
    row = entry(VISUAL)
    assert row.ragen_name == "VisualSimpleSokoban" and row.family == "sokoban"
    assert row.kwargs == {**entry(TEXT).kwargs, "render_mode": "rgb_array"}
    env = gymnasium.make(VISUAL).unwrapped
    assert env.render_mode == "rgb_array"
    assert gymnasium.make(VISUAL, render_mode="ansi").unwrapped.render_mode == "ansi"


def test_the_fixture_covers_the_recorded_seeds():
    assert [r["seed"] for r in records()] == RECORDED_SEEDS
    assert {r["env"] for r in records()} == {"VisualSimpleSokoban"}
    # Half the episodes follow RAGEN-2's BFS to the end, so solving pushes are covered.
    assert sum(any(step["done"] for step in r["steps"]) for r in records()) > 150


def test_every_recorded_episode_replays_exactly_with_a_frame_of_ragen2s_shape():
    env = gymnasium.make(VISUAL).unwrapped
    ids = {name: index for index, name in enumerate(env.action_names)}
    for record in records():
        where = f"seed {record['seed']}"
        observation, info = env.reset(seed=record["seed"])
        assert observation == record["grid"], where
        frame = env.render()
        assert list(frame.shape) == record["frame_shape"] and str(frame.dtype) == record["frame_dtype"], where
        for number, step in enumerate(record["steps"], start=1):
            observation, reward, terminated, truncated, info = env.step(ids[step["action"]])
            at = f"{where} step {number}"
            assert observation == step["grid"], at
            assert reward == step["reward"], at
            assert (terminated or truncated) == step["done"], at
            assert {key: info[key] for key in step["info"]} == step["info"], at
            assert env.render().shape == frame.shape, at


def test_episodes_and_panels_are_sokoban_6x6s():
    visual, text = gymnasium.make(VISUAL).unwrapped, gymnasium.make(TEXT).unwrapped
    for seed in (0, 5, 123):
        assert visual.reset(seed=seed) == text.reset(seed=seed)
        for action in text.optimal_plan(10):
            assert visual.step(action) == text.step(action)
    for split in ("train", "val", "test"):
        ours, theirs = panels.load(VISUAL, split), panels.load(TEXT, split)
        assert ours.seeds == theirs.seeds and ours.obs_sha256 == theirs.obs_sha256
        assert ours.optimal_length == theirs.optimal_length


def test_the_chat_layer_plays_it_as_sokoban_6x6_and_the_frame_follows_the_state():
    config = ChatConfig()
    replies = ["<think>x</think><answer>Up || Left</answer>", "<think>x</think><answer>Down</answer>"]
    transcripts = []
    for env_id in (VISUAL, TEXT):
        env = gymnasium.make(env_id)
        episode = ChatEpisode(env, config, env_id=env_id, seed=7)
        episode.reset()
        frames = [env.unwrapped.render()] if env_id == VISUAL else []
        for text in replies:
            if not episode.done:
                episode.step(AgentReply(text=text))
                frames += [env.unwrapped.render()] if env_id == VISUAL else []
        record = episode.trajectory().to_dict()
        transcripts.append((record["messages"], [t["action_ids"] for t in record["turns"]], record["total_reward"]))
        for frame in frames:
            assert frame.shape == (96, 96, 3) and frame.dtype == np.uint8
    assert transcripts[0] == transcripts[1]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_frame_shows_the_room_cell_by_cell(seed):
    """Every cell of the frame is the 16x16 tile of that cell's symbol in the text grid."""
    from ragen_bench.envs.sokoban import picture

    env = gymnasium.make(VISUAL).unwrapped
    grid, _ = env.reset(seed=seed)
    symbols = list(env.symbol_meanings)  # in cell-code order
    frame = env.render()
    for row, line in enumerate(grid.split("\n")):
        for col, symbol in enumerate(line):
            tile = frame[16 * row : 16 * (row + 1), 16 * col : 16 * (col + 1)]
            assert np.array_equal(tile, picture.TILES[symbols.index(symbol)])
