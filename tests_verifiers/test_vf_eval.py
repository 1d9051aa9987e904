"""``vf-eval`` itself, against the scripted endpoint, scores what ``ragen-bench eval`` scores.

Each case runs verifiers' CLI (``--no-push``: nothing is uploaded; the plugin's seat runs in a
local subprocess runtime with the in-process harness) and ``ragen-bench eval`` with the same agent
on the same seeds, then compares the mean reward per panel with eval's ``mean_return`` and the
mean ``success`` metric with eval's ``success_rate``.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from ragen_bench.integrations.scripted_server import ScriptedEndpoint
from tests_verifiers.conftest import KEY_VAR, REPO_ROOT, ragen_eval, serving

VF_EVAL = str(Path(sys.executable).with_name("vf-eval"))


def vf_eval(out: Path, url: str, model: str, *taskset_flags: str) -> list[dict]:
    """``vf-eval ragen-bench-vf`` into ``out``; the traces it wrote."""
    run = subprocess.run([VF_EVAL, "ragen-bench-vf", *taskset_flags, "-m", model, "--client.base-url", url,
                          "--client.api-key-var", KEY_VAR, "--no-push", "--no-rich", "-o", str(out)],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    (traces_file,) = out.glob("*/traces.jsonl")
    episodes = [json.loads(line) for line in traces_file.read_text().splitlines()]
    assert all(episode["ok"] for episode in episodes), [
        error["message"] for episode in episodes for trace in episode["traces"] for error in trace["errors"]][:5]
    return [trace for episode in episodes for trace in episode["traces"]]


def by_panel(traces: list[dict]) -> dict[tuple[str, str], dict[str, float]]:
    groups = defaultdict(list)
    for trace in traces:
        data = trace["task"]["data"]
        groups[data["env_id"], data["split"]].append(trace)
    return {key: {"episodes": len(group),
                  "mean_return": math.fsum(t["rewards"]["total_reward"]["score"] for t in group) / len(group),
                  "success_rate": math.fsum(t["metrics"]["success"] for t in group) / len(group)}
            for key, group in groups.items()}


@pytest.mark.parametrize(("agent", "eval_keys", "taskset_flags"), [
    ("optimal", ["suite=ragen-sokoban-generalization-v0", "limit=8"],
     ["--env.taskset.suite", "ragen-sokoban-generalization-v0", "--env.taskset.limit", "8"]),
    ("random", ["env=RAGEN/Bandit-v0", "limit=32", "sampling_seed=3"],
     ["--env.taskset.env", "RAGEN/Bandit-v0", "--env.taskset.limit", "32"]),
], ids=["optimal-sokoban-suite", "random-bandit"])
def test_vf_eval_mean_reward_equals_evals(agent, eval_keys, taskset_flags, tmp_path):
    ragen_eval(tmp_path / "eval", f"agent={agent}", *eval_keys)
    summary = json.loads((tmp_path / "eval" / "summary.json").read_text())
    expected = {(g["env_id"], g["split"]): g for g in summary["groups"]}
    with serving(ScriptedEndpoint(agent, sampling_seed=3)) as url:
        got = by_panel(vf_eval(tmp_path / "vf", url, f"ragen-bench-{agent}", *taskset_flags))
    assert set(got) == set(expected)
    for key, numbers in got.items():
        assert numbers["episodes"] == expected[key]["episodes"], key
        assert numbers["mean_return"] == pytest.approx(expected[key]["mean_return"], abs=1e-9), key
        assert numbers["success_rate"] == pytest.approx(expected[key]["success_rate"], abs=1e-12), key
    # The numbers docs/trainers.md quotes.
    print(json.dumps({f"{env_id}:{split}": n for (env_id, split), n in sorted(got.items())}))
