"""`ragen-bench envs verify` where the games extra (PettingZoo) is not installed."""

from __future__ import annotations

import importlib.util

import pytest

from ragen_bench.cli import main


@pytest.fixture
def no_pettingzoo(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: None if name == "pettingzoo" else real(name, *rest))


def test_a_game_asked_for_by_name_fails_with_the_install_hint(no_pettingzoo, capsys):
    assert main(["envs", "verify", "RAGEN/Bandit-v0", "RAGEN/TicTacToe-v0"]) == 1
    out = capsys.readouterr().out
    assert "ok   RAGEN/Bandit-v0 test" in out
    assert "FAIL RAGEN/TicTacToe-v0: the multi-agent games need PettingZoo: pip install 'ragen-bench[games]'" in out


def test_with_pettingzoo_the_game_panels_are_verified(capsys):
    pytest.importorskip("pettingzoo")
    assert main(["envs", "verify", "RAGEN/TicTacToe-v0"]) == 0
    assert capsys.readouterr().out.count("ok   RAGEN/TicTacToe-v0") == 3
