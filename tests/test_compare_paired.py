"""`ragen-bench compare --paired A B`: two run directories of the same episodes, paired."""

from __future__ import annotations

import math

import pytest

from ragen_bench.cli import main
from ragen_bench.leaderboard.errors import LeaderboardError
from ragen_bench.leaderboard.stats import compare_runs


def _eval(out, agent, *extra):
    assert main(["eval", "env=RAGEN/Bandit-v0", "split=test", f"agent={agent}", "limit=40", f"out={out}",
                 "progress=false", *extra]) == 0


def test_paired_runs_give_mcnemar_on_the_discordant_episodes(tmp_path, capsys):
    _eval(tmp_path / "optimal", "optimal")
    _eval(tmp_path / "random", "random")
    result = compare_runs(tmp_path / "optimal", tmp_path / "random")
    overall = result["groups"][-1]
    assert overall["env"] == "all" and overall["pairs"] == 40
    assert overall["success_a"] == 1.0 and overall["only_b"] == 0
    wins = overall["only_a"]
    assert wins == round(40 * (1 - overall["success_b"]))
    # Exact two-sided McNemar with no discordant pair the other way: 2 * 0.5 ** wins.
    assert overall["mcnemar_p"] == pytest.approx(min(1.0, 2 * 0.5**wins))
    capsys.readouterr()
    assert main(["compare", "--paired", str(tmp_path / "optimal"), str(tmp_path / "random")]) == 0
    assert "McNemar p" in capsys.readouterr().out
    assert math.isclose(compare_runs(tmp_path / "random", tmp_path / "random")["groups"][-1]["mcnemar_p"], 1.0)


def test_runs_of_other_episodes_or_settings_are_refused(tmp_path, capsys):
    _eval(tmp_path / "test", "optimal")
    assert main(["eval", "env=RAGEN/Bandit-v0", "split=val", "agent=optimal", "limit=40",
                 f"out={tmp_path / 'val'}", "progress=false"]) == 0
    with pytest.raises(LeaderboardError, match="panels differ"):
        compare_runs(tmp_path / "test", tmp_path / "val")
    _eval(tmp_path / "nothink", "optimal", "chat.think=false", "agent.think=false")
    with pytest.raises(LeaderboardError, match="template hash"):
        compare_runs(tmp_path / "test", tmp_path / "nothink")
    capsys.readouterr()
    assert main(["compare", "--paired", str(tmp_path / "test")]) == 2
    assert "exactly two" in capsys.readouterr().err


def test_pairs_over_streams_give_each_stream_and_the_pooled_sign_test(tmp_path, capsys):
    from ragen_bench.leaderboard.pooled import compare_streams

    runs = []
    for k in (1, 2):
        seed = f"sampling_seed=${{test_stream:0,{k}}}"
        _eval(tmp_path / f"random-{k}", "random", seed)
        _eval(tmp_path / f"optimal-{k}", "optimal", seed)
        runs += [tmp_path / f"random-{k}", tmp_path / f"optimal-{k}"]
    result = compare_streams(runs)
    singles = [compare_runs(runs[i], runs[i + 1])["groups"][-1] for i in (0, 2)]
    for row, single in zip(result["streams"], singles):
        assert (row["only_a"], row["only_b"], row["mcnemar_p"]) == (single["only_a"], single["only_b"],
                                                                      single["mcnemar_p"])
    # The random agent's two streams are different draws of the same 40 seeds.
    assert [row["env"] for row in result["streams"]] == ["seed 961660578", "seed 1306143466"]
    pooled = result["pooled"]
    wins = singles[0]["only_b"] + singles[1]["only_b"]
    assert pooled["only_a"] == 0 and pooled["only_b"] == wins and pooled["pairs"] == 80
    assert pooled["mcnemar_p"] == pytest.approx(2 * 0.5**wins)
    capsys.readouterr()
    assert main(["compare", "--paired", *map(str, runs)]) == 0
    out = capsys.readouterr().out
    assert "pooled (2 streams)" in out and "seed 1306143466" in out and "exact sign test" in out
    # The two-run form is the one table it always was.
    assert main(["compare", "--paired", str(runs[0]), str(runs[1])]) == 0
    out = capsys.readouterr().out
    assert "bootstrap seed 0" in out and "pooled" not in out


def test_pairs_that_are_not_one_panel_under_several_streams_are_refused(tmp_path, capsys):
    from ragen_bench.leaderboard.pooled import compare_streams

    for name, agent, extra in (("r1", "random", "sampling_seed=1"), ("o1", "optimal", "sampling_seed=1"),
                               ("r2", "random", "sampling_seed=2"), ("o2", "optimal", "sampling_seed=2")):
        _eval(tmp_path / name, agent, extra)
    assert main(["eval", "env=RAGEN/Bandit-v0", "split=test", "agent=random", "limit=30", "sampling_seed=3",
                 f"out={tmp_path / 'r3'}", "progress=false"]) == 0
    _eval(tmp_path / "o3", "optimal", "sampling_seed=3")
    run = lambda *names: [tmp_path / name for name in names]  # noqa: E731
    # Fewer instances in one pair: the differing key is named.
    with pytest.raises(LeaderboardError, match="field limit: .*pairs may differ only in the stream"):
        compare_streams(run("r1", "o1", "r3", "o3"))
    # A pair's two runs on different streams.
    with pytest.raises(LeaderboardError, match="field sampling_seed: .*must share their stream"):
        compare_streams(run("r1", "o1", "r2", "o1"))
    # Another model on one side.
    with pytest.raises(LeaderboardError, match=r"field agent\.\w+: .*pairs may differ only in the stream"):
        compare_streams(run("r1", "o1", "o2", "r2"))
    with pytest.raises(LeaderboardError, match="paired more than once"):
        compare_streams(run("r1", "o1", "r1", "o1"))
    capsys.readouterr()
    assert main(["compare", "--paired", *map(str, run("r1", "o1", "r2"))]) == 2
    assert "pairs of them" in capsys.readouterr().err
