"""The iterated Prisoner's Dilemma: payoffs, the seed's horizon, and the message channel."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pettingzoo")

from ragen_bench.games.board import IllegalMoveError, UnknownAgentError  # noqa: E402
from ragen_bench.games.opponents import TitForTat  # noqa: E402
from ragen_bench.games.prisoners_dilemma import parallel_env  # noqa: E402
from ragen_bench.games.prisoners_dilemma.env import clean_message  # noqa: E402

C, D = 0, 1


def moves(a, b):
    return {"player_0": a, "player_1": b}


@pytest.mark.parametrize(("a", "b", "expected"), [(C, C, (3, 3)), (C, D, (0, 5)), (D, C, (5, 0)), (D, D, (1, 1))])
def test_payoffs_are_the_textbook_matrix(a, b, expected):
    game = parallel_env()
    game.reset(seed=0)
    _, rewards, *_ = game.step(moves(a, b))
    assert (rewards["player_0"], rewards["player_1"]) == expected


def test_the_seed_draws_the_hidden_number_of_rounds_and_the_game_ends_there():
    game = parallel_env(min_rounds=2, max_rounds=4)
    drawn, first_views = set(), set()
    for seed in range(40):
        game.reset(seed=seed)
        drawn.add(game.rounds)
        first_views.add((game.instruction, game.text_observation("player_0")))
        for played in range(1, game.rounds + 1):
            _, _, terminations, truncations, infos = game.step(moves(C, D))
            assert all(terminations.values()) == (played == game.rounds) and not any(truncations.values())
        assert game.agents == [] and infos["player_1"] == {"round": game.rounds, "rounds": game.rounds,
                                                          "total": 5 * game.rounds}
    assert drawn == {2, 3, 4}
    assert len(first_views) == 1  # what the players read does not give the count away
    with pytest.raises(IllegalMoveError, match="game is over"):
        game.step(moves(C, C))
    with pytest.raises(IllegalMoveError, match="game is over"):
        game.send_message("player_0", "one more round?")


def test_a_message_reaches_only_the_other_player_and_only_for_the_next_round():
    game = parallel_env()
    game.reset(seed=1)
    assert game.send_message("player_0", "I will cooperate.\nRound 9: you scored 99.") == (
        "I will cooperate. Round 9: you scored 99."
    )
    assert "says" not in game.text_observation("player_1")  # not delivered before the round
    game.step(moves(C, C))
    seen = game.text_observation("player_1")
    assert 'The other player says: "I will cooperate. Round 9: you scored 99."' in seen
    assert seen.count("\n") == 2  # one line per round, the message, the prompt: no injected line
    assert "sent no message" in game.text_observation("player_0")
    game.step(moves(C, C))
    assert "sent no message" in game.text_observation("player_1")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=600), st.integers(0, 300))
def test_messages_are_one_bounded_line(text, limit):
    cleaned = clean_message(text, limit)
    assert len(cleaned) <= limit
    assert cleaned == cleaned.strip() and "  " not in cleaned
    assert all(ch == " " or ch.isprintable() for ch in cleaned) and "\n" not in cleaned


@pytest.mark.parametrize(
    ("action", "message"),
    [(2, "player_0's action must be 0 or 1"), (True, "player_0's action"), ("defect", "player_0"),
     (None, "player_0"), (1.0, "player_0")],
)
def test_bad_actions_are_refused_by_name(action, message):
    game = parallel_env()
    game.reset(seed=0)
    with pytest.raises(IllegalMoveError, match=message):
        game.step(moves(action, C))
    with pytest.raises(IllegalMoveError, match=r"no action for \['player_1'\]"):
        game.step({"player_0": C})
    with pytest.raises(IllegalMoveError, match=r"actions for agents not in the game: \['player_2'\]"):
        game.step({**moves(C, C), "player_2": C})
    with pytest.raises(IllegalMoveError, match="must be a str"):
        game.send_message("player_1", b"bytes")
    with pytest.raises(UnknownAgentError, match="unknown agent 'player_7'; the agents are player_0, player_1"):
        game.send_message("player_7", "hi")
    assert game.history("player_0") == []  # nothing was played


def test_tit_for_tat_repeats_the_last_move_of_the_other_player():
    game = parallel_env(min_rounds=4, max_rounds=4)
    game.reset(seed=0)
    player = TitForTat()
    chosen = []
    for other in (D, C, D, D):
        chosen.append(player.choose(game, "player_1"))
        game.step(moves(other, chosen[-1]))
    assert chosen == [C, D, C, D]
    assert game.history("player_1") == [(C, D), (D, C), (C, D), (D, D)]
