"""The games' rating ladder and W/D/L tables: rated from verified games only, deterministic, bad input refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("openskill")

from ragen_bench.cli import main  # noqa: E402
from ragen_bench.leaderboard.errors import LeaderboardError  # noqa: E402
from ragen_bench.leaderboard.games_tables import games_board  # noqa: E402
from ragen_bench.leaderboard.ladder import RatedGame, check_unique, ladders  # noqa: E402
from ragen_bench.leaderboard.verify import verify  # noqa: E402

from .conftest import one_line_error  # noqa: E402
from .test_leaderboard import copy, edit_json, edit_record, make_submission, records  # noqa: E402

TTT = "RAGEN/TicTacToe-v0"


def _game(seed: int, player: str, opponent: str, outcome: str, env: str = TTT) -> RatedGame:
    return RatedGame(env, seed, 0, player, opponent, outcome, entry=player)


def _by_player(rows: list[dict]) -> dict[str, dict]:
    return {row["player"]: row for row in rows}


# -- the ladder from games -----------------------------------------------------------------


def test_winners_rank_above_losers_and_opponents_are_players() -> None:
    games = [_game(seed, "strong", "minimax", "win") for seed in range(20)]
    games += [_game(seed, "weak", "minimax", "loss") for seed in range(20)]
    rows = ladders(games)
    assert [row["player"] for row in rows] == ["strong", "minimax (opponent)", "weak"]
    assert [row["rank"] for row in rows] == [1, 2, 3]
    by = _by_player(rows)
    assert (by["minimax (opponent)"]["wins"], by["minimax (opponent)"]["losses"], by["minimax (opponent)"]["games"]) \
        == (20, 20, 40)
    # The ordinal is rounded from the unrounded mu and sigma: within the rounding of the three.
    assert by["strong"]["ordinal"] == pytest.approx(by["strong"]["mu"] - 3 * by["strong"]["sigma"], abs=0.0021)
    assert by["strong"]["sigma"] < 25 / 3  # the games made it surer


def test_a_draw_is_a_tie_pulling_both_ratings_together() -> None:
    rows = _by_player(ladders([_game(seed, "a", "b", "draw") for seed in range(10)]))
    assert rows["a"]["mu"] == rows["b (opponent)"]["mu"] == 25.0  # equal players who tie stay equal
    assert rows["a"]["draws"] == rows["b (opponent)"]["draws"] == 10
    # Against a player rated above it, a draw raises a player: ties move ratings toward each other.
    stronger = [_game(seed, "top", "b", "win") for seed in range(10)]
    after = _by_player(ladders([*stronger, *[_game(seed, "top", "c", "draw", env=TTT) for seed in range(10, 20)]]))
    assert after["c (opponent)"]["mu"] > 25.0 > after["b (opponent)"]["mu"]


def test_same_games_in_any_order_give_the_same_bytes() -> None:
    games = [_game(seed, player, opponent, ("win", "draw", "loss")[(seed * 7 + len(player)) % 3], env)
             for env in (TTT, "RAGEN/OS-Nim-v0") for seed in range(40)
             for player, opponent in (("p", "minimax"), ("q", "minimax"), ("p", "random"))]
    once = json.dumps(ladders(games), sort_keys=True)
    assert json.dumps(ladders(games[::-1]), sort_keys=True) == once
    assert json.dumps(ladders(sorted(games, key=lambda g: (g.outcome, -g.seed))), sort_keys=True) == once
    assert {row["env"] for row in ladders(games)} == {TTT, "RAGEN/OS-Nim-v0"}  # one ladder per game


def test_a_game_rated_twice_for_one_player_is_refused() -> None:
    twice = [RatedGame(TTT, 4, 0, "p", "minimax", "win", "entry-a"), RatedGame(TTT, 4, 0, "p", "minimax", "win",
                                                                               "entry-b")]
    with pytest.raises(LeaderboardError) as caught:
        check_unique(twice)
    assert caught.value.field == "player" and "'entry-a' and 'entry-b' both rate as player 'p'" in str(caught.value)


# -- from verified submissions ----------------------------------------------------------------


@pytest.fixture(scope="module")
def ttt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The random agent against TicTacToe's minimax, the test panel's first 6 seeds (both seats)."""
    return make_submission(tmp_path_factory.mktemp("ladder") / "ttt", "ttt", f"env={TTT}", "agent=random", "limit=6")


def test_records_and_ladder_come_from_the_replayed_games(ttt: Path) -> None:
    board = games_board([verify(ttt)])
    [record] = board.records
    outcomes = [r["game"]["outcome"] for r in records(ttt)]
    assert record["games"] == 6 and record["coverage"] == "6/256 seeds x 1"
    assert (record["win"], record["draw"], record["loss"]) == tuple(outcomes.count(o) / 6 for o in ("win", "draw",
                                                                                                    "loss"))
    ladder = _by_player(board.ladder)
    assert (ladder["ttt"]["wins"], ladder["ttt"]["draws"], ladder["ttt"]["losses"]) == tuple(
        outcomes.count(o) for o in ("win", "draw", "loss"))
    assert ladder["minimax (opponent)"]["ordinal"] > ladder["ttt"]["ordinal"]  # minimax never loses


def test_cli_prints_the_ladder_of_verified_games(ttt: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["leaderboard", "ladder", str(ttt)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("TicTacToe\nrank  player")
    assert "minimax (opponent)  opponent" in out and " ttt " in out


def test_cli_refuses_an_entry_given_twice(ttt: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["leaderboard", "ladder", str(ttt), str(ttt)]) == 2
    one_line_error(capsys, "entry 'ttt' is given twice")


def test_cli_refuses_a_tampered_game_before_rating(ttt: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    sub = copy(ttt, tmp_path)
    edit_record(sub, 0, lambda r: r["game"].update(outcome="win", winner=r["game"]["agent_seat"]))
    assert main(["leaderboard", "ladder", str(sub)]) == 2
    one_line_error(capsys, "episodes.jsonl:1", "field game.outcome")


def test_cli_refuses_an_unverified_run_folder(ttt: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A bare eval run (no submission.json) is no verified entry: nothing is rated.
    run = copy(ttt, tmp_path)
    (run / "submission.json").unlink()
    assert main(["leaderboard", "ladder", str(run)]) == 2
    one_line_error(capsys, "submission.json")


def test_cli_refuses_swapped_seats_and_opponents(ttt: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    seats = copy(ttt, tmp_path / "seats")
    edit_record(seats, 1, lambda r: r["game"].update(
        agent_seat="player_1" if r["game"]["agent_seat"] == "player_0" else "player_0"))
    assert main(["leaderboard", "ladder", str(seats)]) == 2
    one_line_error(capsys, "field game.agent_seat", "the seats are swapped")
    opponents = copy(ttt, tmp_path / "opponents")
    edit_json(opponents / "manifest.json", lambda m: m["config"].update(opponent="random"))
    assert main(["leaderboard", "ladder", str(opponents)]) == 2
    one_line_error(capsys, "field game.opponent", "is not the run's opponent")


def test_cli_refuses_an_entry_of_one_seat(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = make_submission(tmp_path / "one", "one", f"env={TTT}", "agent=random", "limit=1")
    assert main(["leaderboard", "ladder", str(one)]) == 2
    one_line_error(capsys, "field config.limit", "plays only player_", "a game entry plays both seats")


def test_cli_refuses_a_single_agent_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bandit = make_submission(tmp_path / "bandit", "bandit", "env=RAGEN/Bandit-v0", "agent=random", "limit=2")
    assert main(["leaderboard", "ladder", str(bandit)]) == 2
    one_line_error(capsys, "is no game entry")
    assert main(["leaderboard", "ladder", "--submissions", str(tmp_path)]) == 2
    one_line_error(capsys, "holds no game entries")


def test_player_pools_entries_and_is_for_games_only(ttt: Path, tmp_path: Path) -> None:
    from ragen_bench.leaderboard.build import build

    subs = tmp_path / "subs"
    bandit = make_submission(subs / "bandit", "bandit", "env=RAGEN/Bandit-v0", "agent=random", "limit=2")
    vs_random = make_submission(subs / "ttt-random", "ttt-random", f"env={TTT}", "agent=random", "opponent=random",
                                "limit=4")
    copy(ttt, subs)
    for sub in (subs / "ttt", vs_random):
        edit_json(sub / "submission.json", lambda info: info.update(player="random-agent"))
    build(subs, tmp_path / "board")
    ladder = (tmp_path / "board" / "ladder.csv").read_text().splitlines()
    assert ladder[0] == "env,player,kind,mu,sigma,ordinal,games,wins,draws,losses,rank"
    assert [line.split(",")[1] for line in ladder[1:]].count("random-agent") == 1  # one player, 10 games
    assert any(line.split(",")[1:3] == ["random-agent", "entry"] and line.split(",")[6] == "10" for line in ladder)
    # Two entries of one player holding the same games would rate them twice.
    copy(subs / "ttt", tmp_path / "again")
    (tmp_path / "again" / "ttt").rename(subs / "ttt2")
    edit_json(subs / "ttt2" / "submission.json", lambda info: info.update(name="ttt2"))
    with pytest.raises(LeaderboardError, match="both rate as player 'random-agent'"):
        build(subs, tmp_path / "board")
    shutil.rmtree(subs / "ttt2")
    edit_json(bandit / "submission.json", lambda info: info.update(player="someone"))
    with pytest.raises(LeaderboardError) as caught:
        build(subs, tmp_path / "board")
    assert (caught.value.field, caught.value.problem) == (
        "player", "player is for game entries (the games' ladder); this entry plays no game")
