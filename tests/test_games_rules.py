"""Exact rules of the board games and the strength of their scripted players."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pettingzoo")

from ragen_bench.games.board import IllegalMoveError  # noqa: E402
from ragen_bench.games.connect_four import env as c4_env  # noqa: E402
from ragen_bench.games.connect_four import raw_env as c4_raw  # noqa: E402
from ragen_bench.games.connect_four.rules import Position, best_moves, replay  # noqa: E402
from ragen_bench.games.opponents import MinimaxPlayer, RandomPlayer, SearchPlayer  # noqa: E402
from ragen_bench.games.tictactoe import env as ttt_env  # noqa: E402
from ragen_bench.games.tictactoe import raw_env as ttt_raw  # noqa: E402
from ragen_bench.games.tictactoe.rules import optimal_moves, value  # noqa: E402


def play(game, moves):
    for move in moves:
        game.step(move)
    return game


def four_in_a_line(planes: np.ndarray) -> bool:
    """Independent check by sliding a 4-cell line over every start and direction of a (rows, cols) 0/1 grid."""
    rows, cols = planes.shape
    for r in range(rows):
        for c in range(cols):
            for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                cells = [(r + k * dr, c + k * dc) for k in range(4)]
                if all(0 <= y < rows and 0 <= x < cols and planes[y, x] for y, x in cells):
                    return True
    return False


# -- Tic-Tac-Toe ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("moves", "winner"),
    [
        ([0, 3, 1, 4, 2], "player_0"),  # top row
        ([0, 1, 3, 4, 8, 7], "player_1"),  # middle column
        ([0, 1, 4, 2, 8], "player_0"),  # main diagonal
        ([2, 0, 4, 1, 6], "player_0"),  # anti-diagonal
    ],
)
def test_tictactoe_lines_win_with_plus_minus_one(moves, winner):
    game = ttt_env()
    game.reset(seed=0)
    play(game, moves)
    loser = "player_1" if winner == "player_0" else "player_0"
    assert all(game.terminations.values())
    assert game.unwrapped.winner == winner
    assert (game.rewards[winner], game.rewards[loser]) == (1, -1)
    assert "won by you" in game.unwrapped.text_observation(winner)


def test_tictactoe_full_board_without_a_line_is_a_draw():
    game = ttt_env()
    game.reset()
    play(game, [0, 4, 8, 1, 7, 6, 2, 5, 3])  # X O X / X O O / O X X: no line
    assert all(game.terminations.values()) and game.unwrapped.winner is None
    assert game.rewards == {"player_0": 0, "player_1": 0}
    assert "a draw" in game.unwrapped.text_observation("player_1")


def test_tictactoe_illegal_move_is_masked_and_ends_the_wrapped_game():
    game = ttt_env()
    game.reset()
    game.step(4)
    mask = game.observe("player_1")["action_mask"]
    assert list(mask) == [1, 1, 1, 1, 0, 1, 1, 1, 1]
    assert not game.observe("player_0")["action_mask"].any()  # not on move
    game.step(4)  # PettingZoo's wrapper logs the illegal move and ends the game
    assert game.rewards == {"player_0": 0, "player_1": -1}
    assert all(game.terminations.values())


@pytest.mark.parametrize("bad", [4, 9, -1, True, 2.0, "B2", None])
def test_tictactoe_raw_env_refuses_bad_moves_naming_the_agent(bad):
    game = ttt_raw()
    game.reset()
    game.step(4)
    with pytest.raises(IllegalMoveError, match="player_1"):
        game.step(bad)
    assert game.board.moves == [4]  # nothing changed


def test_tictactoe_text_view_names_legal_moves_and_marks():
    game = ttt_raw()
    game.reset()
    play(game, [4, 0])
    text = game.text_observation("player_0")
    assert text == (
        "You play X; your opponent plays O.\n  1 2 3\nA O . .\nB . X .\nC . . .\n"
        "It is your move. Legal moves: A2, A3, B1, B3, C1, C2, C3."
    )
    assert text.endswith(".") and "opponent's move" in game.text_observation("player_1")


def test_minimax_values_match_known_theory():
    empty = (0,) * 9
    assert value(empty, 1) == 0  # perfect play draws
    centre_then_edge = (0, 2, 0, 0, 1, 0, 0, 0, 0)  # X centre, O top edge (A2): X wins
    assert value(centre_then_edge, 1) == 1
    centre_then_corner = (2, 0, 0, 0, 1, 0, 0, 0, 0)  # O answers in a corner: draw
    assert value(centre_then_corner, 1) == 0
    # O to move must block the open X line A1-A2: only A3 keeps the draw.
    assert optimal_moves((1, 1, 0, 0, 2, 0, 0, 0, 0), 2) == [2]
    # Against an opening in the centre only the corners hold the draw.
    assert optimal_moves((0, 0, 0, 0, 1, 0, 0, 0, 0), 2) == [0, 2, 6, 8]


def _play_out(game, players, seed):
    game.reset(seed=seed)
    while not game.game_over:
        agent = game.agent_selection
        game.step(players[agent].choose(game, agent))
    return game.winner


def test_minimax_draws_itself_and_never_loses_to_random():
    game = ttt_raw()
    both = {"player_0": MinimaxPlayer(), "player_1": MinimaxPlayer()}
    assert {_play_out(game, both, seed) for seed in range(30)} == {None}
    results = []
    for seed in range(100):
        seats = {"player_0": MinimaxPlayer(), "player_1": RandomPlayer()}
        if seed % 2:
            seats = {"player_0": RandomPlayer(), "player_1": MinimaxPlayer()}
        winner = _play_out(game, seats, seed)
        results.append(None if winner is None else type(seats[winner]).__name__)
    assert "RandomPlayer" not in results
    assert results.count("MinimaxPlayer") >= 70  # random blunders most games


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 8), min_size=1, max_size=30))
def test_tictactoe_text_mask_and_winner_agree_with_an_independent_check(choices):
    game = ttt_raw()
    game.reset()
    for choice in choices:
        if game.game_over:
            break
        agent = game.agent_selection
        legal = [i for i, bit in enumerate(game.observe(agent)["action_mask"]) if bit]
        names = [game.action_names[i] for i in legal]
        assert game.text_observation(agent).endswith(f"Legal moves: {', '.join(names)}.")
        game.step(legal[choice % len(legal)])
    grid = game.board.cells
    lines = [*grid, *grid.T, grid.diagonal(), np.fliplr(grid).diagonal()]
    full_lines = {int(line[0]) for line in lines if line[0] and (line == line[0]).all()}
    expected = None if not full_lines else ("player_0" if 1 in full_lines else "player_1")
    assert game.winner == expected
    if game.game_over:
        assert not any(game.observe(a)["action_mask"].any() for a in game.possible_agents)


# -- Connect Four -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("moves", "winner"),
    [
        ([0, 1, 0, 1, 0, 1, 0], "player_0"),  # vertical in column 1
        ([6, 0, 6, 1, 5, 2, 5, 3], "player_1"),  # bottom row 1-4
        ([0, 1, 1, 2, 2, 3, 2, 3, 3, 6, 3], "player_0"),  # rising diagonal
        ([2, 3, 1, 2, 1, 6, 0, 1, 0, 6, 0, 0], "player_1"),  # falling diagonal of O, 1-4
    ],
)
def test_connect_four_lines_win(moves, winner):
    game = c4_env()
    game.reset()
    play(game, moves)
    assert game.unwrapped.winner == winner
    assert all(game.terminations.values())
    assert four_in_a_line(game.observe(winner)["observation"][:, :, 0])


def test_connect_four_stones_fall_and_full_columns_are_masked():
    game = c4_raw()
    game.reset()
    play(game, [2] * 6)
    assert list(game.observe("player_0")["action_mask"]) == [1, 1, 0, 1, 1, 1, 1]
    assert game.text_observation("player_0").splitlines()[1:4] == ["1 2 3 4 5 6 7", ". . O . . . .", ". . X . . . ."]
    with pytest.raises(IllegalMoveError, match=r"player_0 may not play 2 \(3\)"):
        game.step(2)


def test_connect_four_full_grid_without_four_is_a_draw():
    # A drawn game between two depth-2 players (found once by search, kept literally).
    moves = [3, 3, 3, 2, 6, 2, 4, 5, 2, 3, 6, 1, 4, 2, 4, 4, 5, 5, 5, 2, 4,
             5, 3, 0, 4, 0, 1, 1, 1, 6, 6, 6, 0, 6, 5, 2, 3, 1, 1, 0, 0, 0]
    game = c4_raw()
    game.reset()
    play(game, moves)
    assert game.game_over and game.winner is None and len(game.board.moves) == 42
    assert game.rewards == {"player_0": 0, "player_1": 0}
    assert not four_in_a_line(game.board.cells == 1) and not four_in_a_line(game.board.cells == 2)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=42))
def test_connect_four_bitboard_winner_matches_the_grid(choices):
    game = c4_raw()
    game.reset()
    for choice in choices:
        if game.game_over:
            break
        legal = game.legal_moves(game.agent_selection)
        game.step(legal[choice % len(legal)])
    x_wins = four_in_a_line(game.board.cells == 1)
    o_wins = four_in_a_line(game.board.cells == 2)
    assert (game.winner == "player_0", game.winner == "player_1") == (x_wins, o_wins)


def test_search_takes_a_win_and_blocks_a_threat_at_the_right_depth():
    threat = replay([0, 6, 1, 6, 2])  # X holds columns 1-3 of the bottom row; O to move
    assert best_moves(threat.position(2), 2, False) == [3]  # sees X's reply: blocks
    assert best_moves(threat.position(2), 1, False) == list(range(7))  # one ply: blind to it
    win = replay([0, 6, 1, 6, 2, 5])  # X to move completes the row
    assert best_moves(win.position(1), 1, False) == [3]
    assert best_moves(Position(0, 0), 6, True) == [3]  # the strong player opens in the centre, as theory says


def test_strong_player_beats_random_and_shallow_minimax():
    game = c4_raw()
    wins = 0
    for seed in range(12):
        strong, other = SearchPlayer(6, True), (RandomPlayer() if seed < 6 else SearchPlayer(2, False))
        seats = {"player_0": strong, "player_1": other} if seed % 2 else {"player_0": other, "player_1": strong}
        winner = _play_out(game, seats, seed)
        wins += winner is not None and seats[winner] is strong
    assert wins >= 11  # measured 12/12; the card gives the full numbers
