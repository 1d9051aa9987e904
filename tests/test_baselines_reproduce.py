"""The committed baselines' eval runs still follow from their records, and their weights still play them.

Every eval run directory under ``baselines/`` (found by its ``manifest.json``, so a new baseline
is checked without being listed):

* its ``summary.json`` is the one today's report and metrics code writes for its
  ``episodes.jsonl``, under today's panels and chat templates.  No field is left out for
  timing or the machine: ``summary.json`` holds none (start and end times, sessions, hardware,
  packages and the git commit are in ``manifest.json``, which is not recomputed).  The one
  allowance is the leaderboard verifier's for summaries written before a field existed
  (``LATER_GROUP_FIELDS``: the null-content reply counts), and only while the episodes
  give zero for it;
* its episodes are exactly the planned ones (panel seeds x samples, first ``limit``), and each
  replays on its env under the recorded chat settings (:func:`ragen_bench.eval.replay.replay_episode`,
  the rule ``leaderboard verify`` and ``render`` apply): the seeds still produce those episodes.

Where the weights are committed (``tests/baseline_runs.COMMITTED_WEIGHTS``), the agent is run
again with the recorded settings on a sample of the recorded seeds (3, spread over the panel)
and must write the recorded episodes, field for field: by default one run per committed
weights (``test_baseline_checkpoint.py`` does this for the Sokoban checkpoint's headline run);
every episode of every such run, and its summary, when asked: ``RAGEN_BENCH_FULL_SWEEPS=1``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from ragen_bench import panels, runfiles
from ragen_bench.chat import ChatConfig
from ragen_bench.eval import report
from ragen_bench.eval.games import summarize_games
from ragen_bench.eval.replay import ReplayMismatch, replay_episode, replay_game

from .baseline_runs import (
    BASELINES,
    COMMITTED_WEIGHTS,
    EPISODES,
    RUN_DIRS,
    assert_same_episodes,
    read_json,
    read_records,
    rerun,
    run_id,
    slot,
    weights_of,
)
from .conftest import REPO_ROOT

RUNS = [pytest.param(run_dir, id=run_id(run_dir)) for run_dir in RUN_DIRS]
WITH_WEIGHTS = [pytest.param(run_dir, id=run_id(run_dir)) for run_dir in RUN_DIRS if weights_of(run_dir)]
# Played again by test_baseline_checkpoint.py on its first 8 seeds (with its own claim to check).
CHECKED_ELSEWHERE = {"cpu-sokoban-grpo/results/test/rl-attempt9-step80"}


def _one_run_per_weights() -> list[Any]:
    """For the default run: per committed weights, its largest run (a whole test panel) not checked elsewhere.

    Loading the model is most of a sample's cost (SmolLM2: ~25 s of CPU per run), so the other
    runs of the same weights wait for the full sweep.
    """
    chosen: dict[str, Any] = {}
    for param in WITH_WEIGHTS:
        run_dir = param.values[0]
        weights = weights_of(run_dir)
        episodes = read_json(run_dir / "manifest.json")["expected_episodes"]
        best = chosen.get(weights)
        if param.id not in CHECKED_ELSEWHERE and (best is None or episodes > best[0]):
            chosen[weights] = (episodes, param)
    return [param for _, param in chosen.values()]


SAMPLED = _one_run_per_weights()
# Episodes the default run plays again per run, spread over its panel (the first, then every n-th).
SAMPLE_EPISODES = 3
FULL_SWEEPS = os.environ.get("RAGEN_BENCH_FULL_SWEEPS") == "1"


def recomputed_summary(run_dir: Path, out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(committed, recomputed)``: ``summary.json`` and what ``ragen-bench eval`` writes for the episodes now."""
    manifest, committed = report.load_summary(run_dir)
    current = {f"{env['env_id']}:{env['split']}": panels.load(env["env_id"], env["split"]).checksum
               for env in manifest["envs"]}
    assert manifest["panels"] == current, "the run's panels are no longer the frozen ones"
    # A game's hash covers its game.* rules too, a budgeted run's its ids' budgets: the eval config the
    # manifest records computes those (runs recorded before either existed hash their chat section).
    template_hash = eval_config(manifest).template_hash if needs_eval_config(manifest) else \
        ChatConfig(**manifest["config"]["chat"]).template_hash()
    assert manifest["template_hash"] == template_hash, "today's chat templates give another template hash"
    path = run_dir / EPISODES
    records = [record for _, record in read_records(path)]
    rows = [report.row_of(path, number, record) for number, record in enumerate(records, start=1)]
    fingerprint = {"panels": current, "template_hash": template_hash, "data_files": manifest["data_files"]}
    summary = report.write_summary(out, rows, fingerprint)
    if is_game_run(manifest):  # eval adds the games' table to the summary it wrote (add_game_summary)
        summary["games"] = summarize_games(records)
        runfiles.write_json_atomic(out / "summary.json", summary)
    return committed, summary


def is_game_run(manifest: dict[str, Any]) -> bool:
    return manifest["config"].get("opponent") is not None


def needs_eval_config(manifest: dict[str, Any]) -> bool:
    """A game run, or one played under eval's per-id budgets (``budget`` resolved to each id's limits)."""
    return is_game_run(manifest) or isinstance(manifest["config"].get("budget"), dict)


def eval_config(manifest: dict[str, Any]) -> Any:
    from ragen_bench.eval.config import load

    return load({**manifest["config"], "out": None, "progress": False})


def check_summary(run_dir: Path, out: Path) -> None:
    from ragen_bench.leaderboard.verify import check_summary as verify_summary

    out.mkdir(parents=True, exist_ok=True)
    committed, recomputed = recomputed_summary(run_dir, out)
    # Raises LeaderboardError naming the first differing field, with both values.
    verify_summary(committed, json.loads(json.dumps(recomputed)), name=str(run_dir / "summary.json"))
    if all(set(old) == set(new) for old, new in zip(committed["groups"], recomputed["groups"])):
        # Nothing left out: then the very bytes, as eval writes them.
        assert (out / "summary.json").read_bytes() == (run_dir / "summary.json").read_bytes()


def replay_run(run_dir: Path) -> int:
    """Check the episodes are the planned ones and replay each; returns how many were replayed."""
    import gymnasium

    manifest = read_json(run_dir / "manifest.json")
    config = manifest["config"]
    assert (config["shard"], manifest["complete"]) == ("0/1", True), "a baseline run is whole and complete"
    planned = {(env["env_id"], env["split"], seed, sample)
               for env in manifest["envs"]
               for seed in panels.load(env["env_id"], env["split"]).seeds[: config["limit"]]
               for sample in range(config["samples"])}
    records = read_records(run_dir / EPISODES)
    slots = [slot(record) for _, record in records]
    assert len(slots) == len(set(slots)) == manifest["expected_episodes"], "an episode is missing or repeated"
    assert set(slots) == planned, f"episodes outside the plan: {sorted(set(slots) ^ planned)[:3]}"
    run = eval_config(manifest) if needs_eval_config(manifest) else None
    chat = ChatConfig(**config["chat"])
    if is_game_run(manifest):  # both seats: the recorded replies, the scripted opponent choosing again
        game = run.game
        for number, record in records:
            where = {"file": str(run_dir / EPISODES), "line": number}
            replay_game(record, game, config["env_kwargs"], where=where, opponent=config["opponent"])
        return len(records)
    envs: dict[str, Any] = {}
    try:
        for number, record in records:
            if record["env_id"] not in envs:
                envs[record["env_id"]] = gymnasium.make(record["env_id"], **config["env_kwargs"])
            where = {"file": str(run_dir / EPISODES), "line": number}
            replay_episode(record, envs[record["env_id"]], run.chat_for(record["env_id"]) if run else chat, where=where)
    finally:
        for env in envs.values():
            env.close()
    return len(records)


# -- what every run directory's files say ---------------------------------------------------


def test_every_baseline_eval_run_has_its_three_files():
    # The glob finds run directories by manifest; an episodes log without one would go unchecked.
    logs = {path.parent for path in BASELINES.glob("**/episodes.jsonl*")}
    assert RUN_DIRS and logs == set(RUN_DIRS)
    for run_dir in RUN_DIRS:
        assert (run_dir / "summary.json").is_file() and (run_dir / EPISODES).is_file(), run_id(run_dir)


@pytest.mark.parametrize("run_dir", RUNS)
def test_summary_is_the_one_its_episodes_give(run_dir, tmp_path):
    check_summary(run_dir, tmp_path)


@pytest.mark.parametrize("run_dir", RUNS)
def test_episodes_are_the_planned_ones_and_replay_on_their_seeds(run_dir):
    assert replay_run(run_dir) == read_json(run_dir / "manifest.json")["expected_episodes"]


def _copy(run_dir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    return copy


def _edit_first_record(run_dir: Path, edit) -> None:
    path = run_dir / EPISODES
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    edit(record)
    path.write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n", encoding="utf-8")


def test_the_checks_refuse_an_edited_record_or_summary(tmp_path):
    """The checks above can fail: an edited reply, total or summary number is caught, and named."""
    from ragen_bench.leaderboard.errors import LeaderboardError

    run_dir = BASELINES / "cpu-sokoban-grpo" / "results" / "test" / "start"
    copy = _copy(run_dir, tmp_path)

    def other_reply(record):  # a first move the model did not make
        turn = record["turns"][0]
        edited = turn["raw_response"].replace("Down", "Left", 1)
        assert edited != turn["raw_response"]
        turn["raw_response"] = edited

    _edit_first_record(copy, other_reply)
    mismatch = r"episodes.jsonl:1, turn 1, field parsed_actions\[0\]: differs from the replay"
    with pytest.raises(ReplayMismatch, match=mismatch):
        replay_run(copy)

    copy = _copy(run_dir, tmp_path / "b")
    _edit_first_record(copy, lambda record: record.update(total_reward=record["total_reward"] + 1.0))
    with pytest.raises(ReplayMismatch, match="field total_reward"):
        replay_run(copy)

    copy = _copy(run_dir, tmp_path / "c")
    summary = read_json(copy / "summary.json")
    group = summary["groups"][0]
    group["success_rate"] = math.nextafter(group["success_rate"], 1.0)  # off by one ulp
    (copy / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    with pytest.raises(LeaderboardError, match="success_rate"):
        check_summary(copy, tmp_path / "out")


def test_the_replay_refuses_an_edited_game_record(tmp_path):
    """A game run's replay can fail too: another move of the agent's, or another outcome, is caught."""
    run_dir = next(run_dir for run_dir in RUN_DIRS if is_game_run(read_json(run_dir / "manifest.json")))

    def other_move(record):  # the agent's first reply, Pass and Bet swapped
        turn = record["turns"][0]
        swapped = "Bet" if "Pass" in turn["raw_response"] else "Pass"
        turn["raw_response"] = turn["raw_response"].replace("Pass" if swapped == "Bet" else "Bet", swapped, 1)

    for number, (edit, field) in enumerate([
        (other_move, "turn 1"),
        (lambda record: record["game"].update(outcome="draw"), "outcome"),
    ]):
        copy = _copy(run_dir, tmp_path / str(number))
        _edit_first_record(copy, edit)
        with pytest.raises(ReplayMismatch, match=f"episodes.jsonl.*{field}"):
            replay_run(copy)


# -- the committed weights play their recorded episodes again ----------------------------------


def test_every_committed_checkpoint_is_tied_to_its_recorded_runs():
    """A checkpoint or adapter committed under baselines/ must name the runs it played (COMMITTED_WEIGHTS)."""
    folders = {path.parent.relative_to(REPO_ROOT).as_posix() for path in BASELINES.glob("**/*.safetensors")}
    named = {weights for weights in COMMITTED_WEIGHTS.values() if (REPO_ROOT / weights).is_dir()}
    assert folders == named, "map each committed checkpoint's recorded agent.model in tests/baseline_runs.py"
    played = {weights_of(run_dir) for run_dir in RUN_DIRS}
    assert named <= played, f"committed weights no recorded run used: {sorted(named - played)}"


@pytest.mark.slow
@pytest.mark.parametrize("run_dir", SAMPLED)
def test_committed_weights_play_a_sample_of_their_recorded_episodes_again(run_dir, tmp_path):
    episodes = read_json(run_dir / "manifest.json")["expected_episodes"]
    fresh = rerun(run_dir, weights_of(run_dir), tmp_path, shard=f"0/{math.ceil(episodes / SAMPLE_EPISODES)}")
    assert assert_same_episodes(fresh, run_dir) == SAMPLE_EPISODES


@pytest.mark.slow
@pytest.mark.skipif(not FULL_SWEEPS, reason="every episode of every run with committed weights (1,280 agent episodes, "
                    "not timed here): set RAGEN_BENCH_FULL_SWEEPS=1")
@pytest.mark.parametrize("run_dir", WITH_WEIGHTS)
def test_committed_weights_play_every_recorded_episode_and_summary_again(run_dir, tmp_path):
    from ragen_bench.leaderboard.verify import check_summary as verify_summary

    fresh = rerun(run_dir, weights_of(run_dir), tmp_path)
    assert assert_same_episodes(fresh, run_dir) == read_json(run_dir / "manifest.json")["expected_episodes"]
    verify_summary(read_json(run_dir / "summary.json"), read_json(fresh / "summary.json"),
                   name=str(run_dir / "summary.json"))
