"""The committed baseline checkpoint is the one its recorded results came from.

``baselines/cpu-sokoban-grpo/checkpoint`` is the RL checkpoint whose test-panel run is
``results/test/rl-attempt9-step80`` (the README's 28.5%, the leaderboard entry
``cpu-sokoban-grpo-rl``).  Evaluating it again with the recorded settings must give the recorded
replies, reply for reply, so those numbers belong to the committed file and not to a checkpoint
that only existed on the machine that trained it.
"""

from __future__ import annotations

import pytest

from ragen_bench.eval import run_eval
from ragen_bench.eval.compose import compose_config
from ragen_bench.eval.rundir import EPISODES, MANIFEST, read_episodes, read_json

from .conftest import REPO_ROOT

pytest.importorskip("torch")
pytest.importorskip("transformers")

BASELINE = REPO_ROOT / "baselines" / "cpu-sokoban-grpo"
RECORDED = BASELINE / "results" / "test" / "rl-attempt9-step80"


def test_committed_sokoban_checkpoint_replays_its_recorded_test_episodes(tmp_path):
    recorded_config = read_json(RECORDED / MANIFEST)["config"]
    agent = recorded_config["agent"]
    config = compose_config("eval", [
        f"env={recorded_config['env']}", "split=test", "limit=8", "agent=hf", f"agent.model={BASELINE / 'checkpoint'}",
        f"agent.temperature={agent['temperature']}", f"agent.max_new_tokens={agent['max_new_tokens']}",
        f"chat.think={str(recorded_config['chat']['think']).lower()}", f"sampling_seed={recorded_config['sampling_seed']}",
        f"out={tmp_path}", "progress=false"])
    run_eval(config)

    recorded = {record["seed"]: record for record in read_episodes(RECORDED / EPISODES)}
    fresh = read_episodes(tmp_path / EPISODES)
    assert len(fresh) == 8
    for record in fresh:
        old = recorded[record["seed"]]
        assert [turn["raw_response"] for turn in record["turns"]] == [turn["raw_response"] for turn in old["turns"]], (
            f"seed {record['seed']}")
        assert (record["success"], record["total_reward"]) == (old["success"], old["total_reward"])
    # Not a panel the checkpoint fails everywhere: the recorded run solves some of these seeds.
    assert any(record["success"] for record in fresh)
