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
