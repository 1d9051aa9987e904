"""The leaderboard's reading aids: a trained entry's base entry and training log (verify),
the ranking per suite with its interval, the paper column, the paired comparison with the
base entry and the learning curves (build), against hand-computed values.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from ragen_bench.leaderboard.build import build, mean_interval, ranking_rows, reported_results
from ragen_bench.leaderboard.errors import LeaderboardError
from ragen_bench.leaderboard.verify import verify

from .test_leaderboard import SUITE, make_submission, submission_info


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A "trained" entry (the optimal agent on 3 seeds) with its base (random, 2 seeds x 1) and a training log."""
    folder = tmp_path_factory.mktemp("pair")
    make_submission(folder / "base", "base", f"suite={SUITE}", "agent=random", "limit=2")
    make_submission(folder / "trained", "trained", f"suite={SUITE}", "agent=optimal", "limit=3")
    logs = folder / "trained" / "training"
    logs.mkdir()
    (logs / "metrics.jsonl").write_text("".join(
        json.dumps({"step": step, "rollout/success": step / 4, "actor/pg_loss": 0.1}) + "\n" for step in (1, 2, 3, 4)))
    (logs / "validation.jsonl").write_text("".join(
        json.dumps({"step": step, "split": "val", "success_rate": rate}) + "\n" for step, rate in ((0, 0.25), (4, 1.0))))
    write_info(folder / "trained", base_entry="base", training_metrics="training/metrics.jsonl")
    return folder


def write_info(sub: Path, **changes: Any) -> None:
    (sub / "submission.json").write_text(json.dumps(submission_info(sub.name, **changes)))


def copied(pair: Path, tmp_path: Path) -> Path:
    target = tmp_path / "subs"
    shutil.copytree(pair, target)
    return target


# -- verify: base_entry and training_metrics -------------------------------------------------------


def test_verify_reads_the_training_log(pair: Path) -> None:
    run = verify(pair / "trained")
    assert run.info.base_entry == "base"
    assert [row["rollout/success"] for row in run.training.metrics] == [0.25, 0.5, 0.75, 1.0]
    assert [(row["step"], row["success_rate"]) for row in run.training.validation] == [(0, 0.25), (4, 1.0)]
    assert verify(pair / "base").training is None


@pytest.mark.parametrize(("base", "problem"), [
    ("nobody", "names no entry"),
    ("trained", "base_entry cycle: trained -> trained"),
])
def test_verify_refuses_a_base_entry_naming_no_entry(pair: Path, tmp_path: Path, base: str, problem: str) -> None:
    subs = copied(pair, tmp_path)
    write_info(subs / "trained", base_entry=base)
    with pytest.raises(LeaderboardError, match=problem) as caught:
        verify(subs / "trained")
    assert caught.value.field == "base_entry"


def add_entry(subs: Path, name: str, like: str = "base", **changes: Any) -> None:
    """A copy of the entry ``like`` named ``name`` (same run), with ``changes`` to its submission.json."""
    shutil.copytree(subs / like, subs / name)
    write_info(subs / name, **changes)


def test_two_entries_naming_each_other_are_refused_by_both(pair: Path, tmp_path: Path) -> None:
    """Each would show as trained from the other; verify names the cycle from the entry it checks."""
    subs = copied(pair, tmp_path)
    write_info(subs / "base", base_entry="trained")
    for name, cycle in (("trained", "trained -> base -> trained"), ("base", "base -> trained -> base")):
        with pytest.raises(LeaderboardError) as caught:
            verify(subs / name)
        assert (caught.value.file, caught.value.field) == (str(subs / name / "submission.json"), "base_entry")
        assert caught.value.problem == f"base_entry cycle: {cycle}"
    with pytest.raises(LeaderboardError, match="base_entry cycle"):
        build(subs, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_cycle_further_down_the_chain_is_refused(pair: Path, tmp_path: Path) -> None:
    """trained -> base -> c -> base: the chain from trained never ends, though trained is not in the cycle."""
    subs = copied(pair, tmp_path)
    add_entry(subs, "c", base_entry="base")
    write_info(subs / "base", base_entry="c")
    with pytest.raises(LeaderboardError, match=r"base_entry cycle: base -> c -> base$"):
        verify(subs / "trained")


def test_a_chain_that_ends_passes(pair: Path, tmp_path: Path) -> None:
    """trained -> base -> c, c with no base entry; base -> gone (no folder) ends the chain as well."""
    subs = copied(pair, tmp_path)
    add_entry(subs, "c")
    write_info(subs / "base", base_entry="c")
    assert verify(subs / "trained").info.base_entry == "base"
    write_info(subs / "c", base_entry="gone")
    assert verify(subs / "trained").info.base_entry == "base"  # c's own verify refuses "gone"


def test_a_base_entry_whose_submission_is_broken_is_named(pair: Path, tmp_path: Path) -> None:
    subs = copied(pair, tmp_path)
    (subs / "base" / "submission.json").write_text('{"name": ')
    with pytest.raises(LeaderboardError, match="not valid JSON") as caught:
        verify(subs / "trained")
    assert caught.value.file == str(subs / "base" / "submission.json")


@pytest.mark.parametrize(("path", "field"), [
    ("../base/submission.json", "training_metrics"),
    ("/etc/passwd", "training_metrics"),
])
def test_verify_refuses_training_metrics_outside_the_folder(pair: Path, tmp_path: Path, path: str,
                                                             field: str) -> None:
    subs = copied(pair, tmp_path)
    write_info(subs / "trained", training_metrics=path)
    with pytest.raises(LeaderboardError) as caught:
        verify(subs / "trained")
    assert caught.value.field == field


@pytest.mark.parametrize(("file", "line", "field"), [
    ("metrics.jsonl", '{"step": "1"}', "step"),
    ("metrics.jsonl", '{"step": -1}', "step"),
    ("metrics.jsonl", '{"step": 9007199254740993}', "step"),  # 2**53 + 1: no float holds it exactly
    ("metrics.jsonl", '{"step": 1e999}', "step"),
    ("metrics.jsonl", '{"step": 1, "rollout/success": true}', "rollout/success"),
    ("metrics.jsonl", '{"step": 1, "rollout/success": 1e999}', "rollout/success"),
    ("metrics.jsonl", '{"step": 1, "rollout/success": NaN}', "rollout/success"),
    ("validation.jsonl", '{"step": 1, "split": "val"}', "success_rate"),
    ("validation.jsonl", '{"step": 1, "split": "val", "success_rate": -1e999}', "success_rate"),
    ("validation.jsonl", '{"step": 1, "split": "val", "success_rate": %s}' % ("1" * 400), "success_rate"),
    ("validation.jsonl", '{"step": 1, "split": "", "success_rate": 0.5}', "split"),
    ("validation.jsonl", '{"step": 1, "split": "%s", "success_rate": 0.5}' % ("v" * 301), "split"),
    ("validation.jsonl", '{"step": 1, "split": "val\\ud800", "success_rate": 0.5}', "split"),  # a lone surrogate
])
def test_verify_refuses_a_malformed_training_log(pair: Path, tmp_path: Path, file: str, line: str,
                                                 field: str) -> None:
    subs = copied(pair, tmp_path)
    with (subs / "trained" / "training" / file).open("a") as handle:
        handle.write(line + "\n")
    with pytest.raises(LeaderboardError) as caught:
        verify(subs / "trained")
    assert caught.value.field == field and caught.value.file.endswith(file)


def test_the_largest_step_and_any_drawable_split_pass(pair: Path, tmp_path: Path) -> None:
    subs = copied(pair, tmp_path)
    with (subs / "trained" / "training" / "metrics.jsonl").open("a") as handle:
        handle.write(json.dumps({"step": 2**53, "rollout/success": 0.5}) + "\n")
    with (subs / "trained" / "training" / "validation.jsonl").open("a") as handle:
        handle.write(json.dumps({"step": 5, "split": "v" * 300, "success_rate": 0.5}) + "\n")
    run = verify(subs / "trained")
    assert run.training.metrics[-1]["step"] == 2**53 and run.training.validation[-1]["split"] == "v" * 300


def test_verify_refuses_missing_training_metrics(pair: Path, tmp_path: Path) -> None:
    subs = copied(pair, tmp_path)
    (subs / "trained" / "training" / "metrics.jsonl").unlink()
    with pytest.raises(LeaderboardError, match="file is missing"):
        verify(subs / "trained")


# -- the ranking -----------------------------------------------------------------------------------


def test_mean_interval_hand_computed() -> None:
    score, low, high = mean_interval([(0.5, 0.3, 0.7), (1.0, 0.9, 1.0)])
    assert score == 0.75
    assert low == pytest.approx(0.75 - (0.2**2 + 0.1**2) ** 0.5 / 2)  # 0.6382
    assert high == pytest.approx(0.75 + 0.2 / 2)
    assert mean_interval([(0.25, 0.1, 0.5)]) == (0.25, 0.1, 0.5)  # one env: its own interval


def test_mean_interval_stays_inside_the_mean_bounds() -> None:
    envs = [(0.0, 0.0, 0.3), (1.0, 0.8, 1.0), (0.5, 0.2, 0.8)]
    score, low, high = mean_interval(envs)
    assert sum(e[1] for e in envs) / 3 <= low <= score <= high <= sum(e[2] for e in envs) / 3


def detail_row(entry: str, env: str, success: float, seeds: int = 2, progress: float | None = None) -> dict[str, Any]:
    progress = success if progress is None else progress
    return {"suite": "suite s", "entry": entry, "env": env, "split": "test", "success": success,
            "success_low": success / 2, "success_high": (1 + success) / 2, "seeds": seeds, "panel_seeds": 256,
            "progress": progress, "progress_low": progress / 2, "progress_high": (1 + progress) / 2,
            "samples": 1, "model": f"model of {entry}", "recipe": f"recipe of {entry}", "budget": "5/5/10"}


def test_ranking_orders_by_progress_where_a_world_scores_more_than_success() -> None:
    # BALROG's rule: Crafter's achievements count though no episode unlocked all 22 (success 0).
    rows = [detail_row("crafty", "Crafter", 0.0, progress=0.4), detail_row("crafty", "GoTo", 0.2),
            detail_row("lucky", "Crafter", 0.0, progress=0.1), detail_row("lucky", "GoTo", 0.4)]
    ranking = ranking_rows(rows)
    assert [(r["entry"], r["rank"], r["score"]) for r in ranking] == [("crafty", 1, pytest.approx(0.3)),
                                                                     ("lucky", 2, pytest.approx(0.25))]
    assert (ranking[0]["Crafter"], ranking[0]["GoTo"]) == (0.4, 0.2)


def test_ranking_rows_rank_by_the_mean_and_share_ties() -> None:
    rows = [detail_row("a", "E1", 0.5), detail_row("a", "E2", 0.5),
            detail_row("b", "E1", 1.0), detail_row("b", "E2", 0.0, seeds=3),
            detail_row("c", "E1", 1.0), detail_row("c", "E2", 1.0)]
    ranking = ranking_rows(rows)
    assert [(r["entry"], r["rank"], r["score"]) for r in ranking] == [("c", 1, 1.0), ("a", 2, 0.5), ("b", 2, 0.5)]
    b = ranking[2]
    assert (b["E1"], b["E2"]) == (1.0, 0.0) and b["coverage"] == "5/512 seeds x 1"
    assert (b["model"], b["recipe"]) == ("model of b", "recipe of b")


def test_reported_results_map_the_papers_table() -> None:
    reported = reported_results()
    assert reported.success[("RAGEN/Bandit-Rev-v0", "test")] == pytest.approx(0.676)
    assert reported.success[("RAGEN/Sokoban-8x8-v0", "test")] == pytest.approx(0.023)
    assert len(reported.success) == 6 and reported.name == "RAGEN paper"
    assert reported.recipe == "StarPO-S, Qwen2.5-0.5B-Instruct (arXiv:2504.20073, Table 4)"


@pytest.fixture(scope="module")
def board(pair: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("board")
    build(pair, out)
    return out


def test_ranking_csv_and_readme_lead_with_the_ranking(board: Path) -> None:
    ranking = list(csv.DictReader(io.StringIO((board / "ranking.csv").read_text())))
    # Both played every env under its id's own budget (eval's default), so they rank together.
    assert [(r["suite"], r["rank"], r["entry"], r["budget"]) for r in ranking] == [
        (f"suite {SUITE}", "1", "trained", "each id's"), (f"suite {SUITE}", "2", "base", "each id's")]
    # The optimal agent solves every Sokoban and Bandit level on these seeds; FrozenLake is slippery.
    detail = list(csv.DictReader(io.StringIO((board / "leaderboard.csv").read_text())))
    trained = [float(r["success"]) for r in detail if r["entry"] == "trained"]
    assert float(ranking[0]["score"]) == pytest.approx(sum(trained) / len(trained))
    assert (ranking[0]["seeds"], ranking[0]["panel_seeds"]) == ("24", str(8 * 256))
    assert {r["paper"] for r in detail if r["env"] == "RAGEN/Sokoban-8x8-v0"} == {"0.023"}
    text = (board / "README.md").read_text()
    suite = text.index(f"## suite {SUITE}")
    assert text.index("| rank | entry | budget | score | 95% CI | Bandit-HeldOut | Bandit-Rev | Bandit |", suite) < \
        text.index("### suite", suite)
    assert "| 1 | trained | each id's |" in text
    # The paper's row: no rank, score, coverage or model; its numbers under the envs it reports, its recipe
    # shortened (in full in the closing notes).
    assert ("| - | RAGEN paper \\(reported, not verified\\) | - | - | - | - | 0.676 | 1.000 | - | 0.199 | 0.188 | 0.215 "
            "| 0.023 | - | - | StarPO-S, Qwen2.5-0.5B-Instruct\u2026 |") in text
    assert "RAGEN paper: StarPO-S, Qwen2.5-0.5B-Instruct (arXiv:2504.20073, Table 4)" in text


def test_readme_pairs_the_trained_entry_with_its_base(pair: Path, board: Path) -> None:
    """Shared episodes: the base's 2 seeds of each of the 8 panels; counts from the two logs."""
    def successes(name: str) -> dict[tuple[Any, ...], bool]:
        lines = (pair / name / "episodes.jsonl").read_text().splitlines()
        return {(r["env_id"], r["seed"]): r["success"] for r in map(json.loads, lines)}

    trained, base = successes("trained"), successes("base")
    shared = sorted(set(trained) & set(base))
    only_trained = sum(trained[k] and not base[k] for k in shared)
    only_base = sum(base[k] and not trained[k] for k in shared)
    text = (board / "README.md").read_text()
    (line,) = [line for line in text.splitlines() if line.startswith("| trained | base | all |")]
    cells = [cell.strip() for cell in line.strip("|").split("|")]
    assert cells[3:8] == [str(len(shared)), f"{sum(trained[k] for k in shared) / len(shared):.3f}",
                          f"{sum(base[k] for k in shared) / len(shared):.3f}", str(only_trained), str(only_base)]
    assert len(shared) == 16 and only_trained > 0


def test_learning_curves_plot_is_written(board: Path, pair: Path, tmp_path: Path) -> None:
    curves = (board / "learning_curves.png").read_bytes()
    assert curves.startswith(b"\x89PNG") and b"Software" not in curves
    subs = copied(pair, tmp_path)
    write_info(subs / "trained", base_entry="base")  # no training log: the placeholder plot
    build(subs, tmp_path / "out")
    assert (tmp_path / "out" / "learning_curves.png").read_bytes() != curves


def test_splits_matplotlib_would_read_as_math_build(pair: Path, tmp_path: Path) -> None:
    """A split is a legend label: `$...$` once broke build with a mathtext error naming no entry."""
    subs = copied(pair, tmp_path)
    splits = ["val $x^{$", "$\\alpha$", "_hidden", "\\$ 100% #_^{}~& \\", "</script><!--"]
    with (subs / "trained" / "training" / "validation.jsonl").open("a") as handle:
        handle.writelines(json.dumps({"step": 5, "split": split, "success_rate": 0.5}) + "\n" for split in splits)
    assert [row["split"] for row in verify(subs / "trained").training.validation][-5:] == splits
    build(subs, tmp_path / "out")
    assert (tmp_path / "out" / "learning_curves.png").read_bytes().startswith(b"\x89PNG")

