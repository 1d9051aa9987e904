"""Frozen seed panels of the multi-agent games: what a seed decides, pinned and checked."""

from __future__ import annotations

import pytest

pytest.importorskip("pettingzoo")

from ragen_bench import panels  # noqa: E402
from ragen_bench.games import GAME_IDS  # noqa: E402
from ragen_bench.games import seeds as seeds_module  # noqa: E402
from ragen_bench.games.seeds import agent_seat, seed_view  # noqa: E402


@pytest.mark.parametrize("env_id", GAME_IDS)
def test_every_game_has_three_frozen_panels_that_still_match(env_id):
    assert panels.available(env_id) == ["train", "val", "test"]
    test = panels.load(env_id, "test")
    assert test.seeds == tuple(range(123, 187) if env_id.startswith("RAGEN/TA-") else range(123, 379))
    assert len(set(test.obs_sha256)) == len(test.seeds)  # every seed pins something of its own
    test.verify()


def test_seats_alternate_with_the_seed_and_a_panel_is_balanced():
    assert [agent_seat(s, 2) for s in (123, 124, 125)] == ["player_1", "player_0", "player_1"]
    seats = [agent_seat(s, 2) for s in panels.load("RAGEN/TicTacToe-v0", "test").seeds]
    assert seats.count("player_0") == seats.count("player_1") == 128


def test_seed_view_pins_seat_horizon_first_views_and_tie_breaks():
    text, info = seed_view("RAGEN/PrisonersDilemma-v0", 124)
    assert info == {}
    lines = text.splitlines()
    assert lines[:4] == ["env: RAGEN/PrisonersDilemma-v0", "seed: 124", "agent seat: player_0", "rounds: 10"]
    assert lines[-1].startswith("tie-break draws: ") and len(lines[-1].split()) == 6
    board = seed_view("RAGEN/ConnectFour-v0", 7)[0]
    assert "--- first view of player_1\nYou play O; your opponent plays X.\n1 2 3 4 5 6 7\n" in board


def test_a_changed_tie_break_stream_is_reported_as_drift(monkeypatch):
    panel = panels.load("RAGEN/TicTacToe-v0", "test")
    real = seed_view
    monkeypatch.setattr(seeds_module, "seed_view", lambda env_id, seed: real(env_id, seed + 1))
    with pytest.raises(panels.PanelError, match="seed 123 now produces a different initial observation"):
        panel.verify()
