"""The committed baseline checkpoint is the one its recorded results came from.

``baselines/cpu-sokoban-grpo/checkpoint`` is the RL checkpoint whose test-panel run is
``results/test/rl-attempt9-step80`` (the README's 28.5%, the leaderboard entry
``cpu-sokoban-grpo-rl``).  Evaluating it again with the recorded settings must give the recorded
replies, reply for reply, so those numbers belong to the committed file and not to a checkpoint
that only existed on the machine that trained it.
"""

from __future__ import annotations

import pytest

from .baseline_runs import BASELINES, assert_same_episodes, read_records, rerun, weights_of

pytest.importorskip("torch")
pytest.importorskip("transformers")

RECORDED = BASELINES / "cpu-sokoban-grpo" / "results" / "test" / "rl-attempt9-step80"


def test_committed_sokoban_checkpoint_replays_its_recorded_test_episodes(tmp_path):
    # The recorded settings (T = 0.5, 24 new tokens, no-think template, the sampling seed), the
    # committed checkpoint, the first 8 test seeds; every field of each record must match.
    assert weights_of(RECORDED) == "baselines/cpu-sokoban-grpo/checkpoint"
    fresh = rerun(RECORDED, weights_of(RECORDED), tmp_path, limit=8)
    assert assert_same_episodes(fresh, RECORDED) == 8
    # Not a panel the checkpoint fails everywhere: the recorded run solves some of these seeds.
    assert any(record["success"] for _, record in read_records(fresh / "episodes.jsonl"))
