"""``leaderboard verify`` on multi-agent game runs: every seat replayed, the opponent recomputed.

Clean game submissions are made with the real harness; each tampering test copies one,
changes one thing (a move, an outcome, a seed, the seats, the opponent, the log's length
or order) and checks that ``verify`` refuses it in one line naming the episode and seat.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pettingzoo")

from ragen_bench.chat import AgentReply, AgentRequest  # noqa: E402
from ragen_bench.cli import main  # noqa: E402
from ragen_bench.leaderboard.errors import LeaderboardError  # noqa: E402
from ragen_bench.leaderboard.verify import verify  # noqa: E402

from .conftest import one_line_error  # noqa: E402
from .test_leaderboard import (  # noqa: E402
    copy, counted_reply, edit_json, edit_record, key, make_submission, records, refused, refuses_any_edit, write_records,
)

TTT = "RAGEN/TicTacToe-v0"
KUHN = "RAGEN/OS-KuhnPoker-v0"
HERE = "tests.test_leaderboard_games"
_LEGAL = re.compile(r"Legal moves: ([^\n]*)\.")


class TokenFirstLegal:
    """Plays the first legal move its prompt lists and reports token counts; on odd seeds its first
    reply names no move (an invalid turn, asked again). Test only."""

    name = "first-legal-tokens"

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        replies = []
        for request in requests:
            found = _LEGAL.findall(request.messages[-1]["content"])
            seed = int(request.episode_key.split("/")[-2])
            move = "nowhere" if request.turn == 1 and seed % 2 else found[-1].split(", ")[0]
            replies.append(counted_reply(f"<think>first</think><answer>{move}</answer>", request))
        return replies

    def close(self) -> None:
        pass


def make_first_legal(**settings: Any) -> TokenFirstLegal:
    return TokenFirstLegal()


class LongFirstLegal:
    """Plays the first legal move in replies longer than ``max_response_chars`` (4096): they are recorded cut."""

    name = "long-first-legal"

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        moves = [_LEGAL.findall(request.messages[-1]["content"])[-1].split(", ")[0] for request in requests]
        return [AgentReply(f"<think>{'x' * 5000}</think><answer>{move}</answer>") for move in moves]

    def close(self) -> None:
        pass


def make_long(**settings: Any) -> LongFirstLegal:
    return LongFirstLegal()


@pytest.fixture(scope="session")
def ttt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The random agent against TicTacToe's default opponent (minimax), the test panel's first 6 seeds."""
    return make_submission(tmp_path_factory.mktemp("games") / "ttt", "ttt", f"env={TTT}", "agent=random", "limit=6")


@pytest.fixture(scope="session")
def duel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A token-reporting chat agent against itself as an agent opponent: both seats are recorded replies."""
    agent = f"{HERE}:make_first_legal"
    return make_submission(tmp_path_factory.mktemp("games") / "duel", "duel", f"env={TTT}", f"agent.name={agent}",
                           f"opponent={{name: '{agent}'}}", "limit=4")


@pytest.fixture(scope="session")
def long_duel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both seats reply at over 4096 characters: every turn is stored cut, with the reply's whole length."""
    agent = f"{HERE}:make_long"
    return make_submission(tmp_path_factory.mktemp("games") / "long", "long", f"env={TTT}", f"agent.name={agent}",
                           f"opponent={{name: '{agent}'}}", "limit=2")


@pytest.fixture(scope="session")
def kuhn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Kuhn Poker against MCTS: the seed deals the cards."""
    return make_submission(tmp_path_factory.mktemp("games") / "kuhn", "kuhn", f"env={KUHN}", "agent=random",
                           "limit=8")


def other(seat: str) -> str:
    return "player_1" if seat == "player_0" else "player_0"


# -- clean game entries ------------------------------------------------------------------


def test_clean_game_entries_pass(ttt: Path, duel: Path, kuhn: Path) -> None:
    for sub, games in ((ttt, 6), (duel, 4), (kuhn, 8)):
        run = verify(sub)
        assert len(run.rows) == games and run.summary["games"][0]["games"] == games
        assert {record["game"]["agent_seat"] for record in records(sub)} == {"player_0", "player_1"}
    assert all(r["game"]["opponent_trajectory"] for r in records(duel))
    assert any(not turn["valid"] for r in records(duel) for turn in r["turns"])  # retries replay too


def test_the_log_in_another_order_passes(ttt: Path, tmp_path: Path) -> None:
    # eval appends games as they finish, so the log's order is no part of the result.
    sub = copy(ttt, tmp_path)
    write_records(sub, records(sub)[::-1])
    assert len(verify(sub).rows) == 6


def test_cli_error_is_one_line_naming_episode_and_seat(ttt: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    sub = copy(ttt, tmp_path)
    record = edit_record(sub, 0, lambda r: r["game"].update(outcome="win"))
    assert main(["leaderboard", "verify", str(sub)]) == 2
    seat = record["game"]["agent_seat"]
    one_line_error(capsys, f"episode {key(record)}, seat {seat}", "field game.outcome", "found 'win'")


# -- moves ---------------------------------------------------------------------------------


def test_changed_agent_move(ttt: Path, tmp_path: Path) -> None:
    sub = copy(ttt, tmp_path)
    record = edit_record(sub, 1, lambda r: r["turns"][0].update(action_ids=[r["turns"][0]["action_ids"][0] + 1]))
    error = refused(sub)
    assert (error.line, error.episode, error.seat, error.turn, error.field) == (
        2, key(record), record["game"]["agent_seat"], 1, "action_ids[0]")


def test_changed_opponent_move_is_recomputed_not_trusted(ttt: Path, tmp_path: Path) -> None:
    sub = copy(ttt, tmp_path)
    items = records(sub)
    seat = items[2]["game"]["agent_seat"]
    index = next(i for i, (who, _) in enumerate(items[2]["game"]["moves"]) if who != seat)
    items[2]["game"]["moves"][index][1] = (items[2]["game"]["moves"][index][1] + 1) % 9
    write_records(sub, items)
    error = refused(sub)
    assert (error.episode, error.seat, error.field) == (key(items[2]), other(seat), f"game.moves[{index}][1]")


def test_reordered_moves(ttt: Path, tmp_path: Path) -> None:
    sub = copy(ttt, tmp_path)
    record = edit_record(sub, 0, lambda r: r["game"]["moves"].reverse())
    error = refused(sub)
    assert error.episode == key(record) and error.field.startswith("game.moves[0]")
    assert error.seat == record["game"]["moves"][-1][0]  # the seat whose move the replay has first


def test_reordered_turns(ttt: Path, tmp_path: Path) -> None:
    sub = copy(ttt, tmp_path)
    record = edit_record(sub, 3, lambda r: r["turns"].reverse())
    error = refused(sub)
    assert (error.line, error.episode, error.seat) == (4, key(record), record["game"]["agent_seat"])


def test_changed_opponent_reply(duel: Path, tmp_path: Path) -> None:
    sub = copy(duel, tmp_path)

    def change(record: dict[str, Any]) -> None:
        turn = record["game"]["opponent_trajectory"]["turns"][-1]
        turn["raw_response"] = turn["raw_response"].replace("<answer>", "<answer>Z9 ")

    record = edit_record(sub, 0, change)
    error = refused(sub)
    assert (error.episode, error.seat) == (key(record), other(record["game"]["agent_seat"]))


def test_inflated_opponent_tokens(duel: Path, tmp_path: Path) -> None:
    sub = copy(duel, tmp_path)
    record = edit_record(sub, 1, lambda r: r["game"]["opponent_trajectory"]["turns"][0].update(
        completion_tokens=10**6))
    error = refused(sub)
    assert (error.seat, error.turn, error.field) == (other(record["game"]["agent_seat"]), 1, "completion_tokens")
    assert error.problem.startswith("implausible")


def test_replies_cut_at_the_limit_keep_their_length(long_duel: Path, tmp_path: Path) -> None:
    # The one turn field replay cannot know, for either seat; verify bounds it by the text kept.
    items = records(long_duel)
    assert all(turn["response_chars"] > len(turn["raw_response"]) == 4096
               for r in items for turn in [*r["turns"], *r["game"]["opponent_trajectory"]["turns"]])
    assert len(verify(long_duel).rows) == 2
    sub = copy(long_duel, tmp_path)
    record = edit_record(sub, 0, lambda r: r["game"]["opponent_trajectory"]["turns"][1].update(response_chars=100))
    error = refused(sub)
    assert (error.seat, error.turn, error.field, error.found) == (
        other(record["game"]["agent_seat"]), 2, "response_chars", 100)


# -- outcomes ------------------------------------------------------------------------------


@pytest.mark.parametrize(("change", "field"), [
    (lambda r: r.update(success=not r["success"]), "success"),
    (lambda r: r["game"].update(outcome="win" if r["game"]["outcome"] != "win" else "loss"), "game.outcome"),
    (lambda r: r["game"].update(winner=r["game"]["agent_seat"] if r["game"]["winner"] is None else None),
     "game.winner"),
    (lambda r: r.update(total_reward=r["total_reward"] + 1.0), "total_reward"),
])
def test_changed_outcome(ttt: Path, tmp_path: Path, change: Any, field: str) -> None:
    sub = copy(ttt, tmp_path)
    record = edit_record(sub, 4, change)
    error = refused(sub)
    assert (error.episode, error.seat, error.field) == (key(record), record["game"]["agent_seat"], field)


def test_changed_total_names_its_seat(ttt: Path, tmp_path: Path) -> None:
    sub = copy(ttt, tmp_path)
    items = records(sub)
    rival = other(items[0]["game"]["agent_seat"])
    items[0]["game"]["totals"][rival] += 2.0
    write_records(sub, items)
    error = refused(sub)
    assert (error.seat, error.field) == (rival, f"game.totals.{rival}")


def test_edited_games_summary(ttt: Path, tmp_path: Path) -> None:
    sub = copy(ttt, tmp_path)
    edit_json(sub / "summary.json", lambda s: s["games"][0].update(win_rate=1.0))
    error = refused(sub)
    assert (error.file, error.field) == (str(sub / "summary.json"), "summary.games[0].win_rate")


# -- seeds and deals -----------------------------------------------------------------------


def test_swapped_deals(kuhn: Path, tmp_path: Path) -> None:
    # Two games of the same seat whose deals differ trade seeds: each replays under the other's deal.
    sub = copy(kuhn, tmp_path)
    items = records(sub)
    first_view = {i: r["messages"][1]["content"] for i, r in enumerate(items)}
    a, b = next((i, j) for i in range(len(items)) for j in range(i + 1, len(items))
                if items[i]["seed"] % 2 == items[j]["seed"] % 2 and first_view[i] != first_view[j])
    items[a]["seed"], items[b]["seed"] = items[b]["seed"], items[a]["seed"]
    write_records(sub, items)
    error = refused(sub)
    assert error.line == min(a, b) + 1 and error.seat == items[min(a, b)]["game"]["agent_seat"]
    assert error.turn == 1 and error.problem == "differs from the replay"


@pytest.mark.parametrize(("field", "value", "problem"), [
    ("seed", 5, "not in the run's plan"), ("sample", 1, "not in the run's plan"),
])
def test_seed_outside_the_plan(ttt: Path, tmp_path: Path, field: str, value: int, problem: str) -> None:
    sub = copy(ttt, tmp_path)
    edit_record(sub, 2, lambda r: r.update({field: value}))
    error = refused(sub)
    assert error.line == 3 and problem in error.problem


# -- truncation and duplicates ---------------------------------------------------------------


def test_dropped_game(ttt: Path, tmp_path: Path) -> None:
    sub = copy(ttt, tmp_path)
    items = records(sub)
    dropped = items.pop()
    write_records(sub, items)
    error = refused(sub)
    assert error.episode == key(dropped) and "missing" in error.problem


def test_game_cut_short(ttt: Path, tmp_path: Path) -> None:
    sub = copy(ttt, tmp_path)
    record = edit_record(sub, 0, lambda r: r["turns"].pop())
    error = refused(sub)
    assert (error.episode, error.seat, error.field) == (key(record), record["game"]["agent_seat"], "num_turns")
    assert "had not ended" in error.problem


def test_duplicated_game(ttt: Path, tmp_path: Path) -> None:
    sub = copy(ttt, tmp_path)
    items = records(sub)
    write_records(sub, [*items, items[1]])
    error = refused(sub)
    assert (error.line, error.episode) == (7, key(items[1])) and "appears twice (first on line 2)" in error.problem


# -- seats and opponents ---------------------------------------------------------------------


def test_swapped_seat(ttt: Path, tmp_path: Path) -> None:
    sub = copy(ttt, tmp_path)
    record = edit_record(sub, 0, lambda r: r["game"].update(agent_seat=other(r["game"]["agent_seat"])))
    error = refused(sub)
    seat = other(record["game"]["agent_seat"])
    assert (error.episode, error.seat, error.field, error.expected) == (key(record), seat, "game.agent_seat", seat)
    assert error.problem == f"the seats are swapped: the seed decides the seat, and on seed {record['seed']} " \
                            f"the agent plays {seat}"


def test_swapped_sides_of_a_duel(duel: Path, tmp_path: Path) -> None:
    # The agent's transcript and the opponent's trade places: the replies no longer fit their seats.
    sub = copy(duel, tmp_path)

    def swap(record: dict[str, Any]) -> None:
        rival = record["game"]["opponent_trajectory"]
        mine = {k: v for k, v in record.items() if k != "game"}
        record.update(rival)
        record["game"]["opponent_trajectory"] = mine

    record = edit_record(sub, 0, swap)
    error = refused(sub)
    assert error.episode == key(record) and error.seat is not None


def test_record_against_another_opponent(ttt: Path, tmp_path: Path) -> None:
    sub = copy(ttt, tmp_path)
    record = edit_record(sub, 5, lambda r: r["game"].update(opponent="random"))
    error = refused(sub)
    assert (error.line, error.seat, error.field, error.expected, error.found) == (
        6, other(record["game"]["agent_seat"]), "game.opponent", "minimax", "random")


def test_manifest_names_another_opponent(ttt: Path, tmp_path: Path) -> None:
    # The run was played against minimax; a manifest claiming random is refused at its first game.
    sub = copy(ttt, tmp_path)
    edit_json(sub / "manifest.json", lambda m: m["config"].update(opponent="random"))
    error = refused(sub)
    assert (error.line, error.field, error.expected, error.found) == (1, "game.opponent", "random", "minimax")


@pytest.mark.parametrize("overrides", [("limit=1",), ("limit=2", "shard=1/2")])
def test_an_entry_of_one_seat_is_refused(tmp_path: Path, overrides: tuple[str, ...]) -> None:
    # limit=1 is the panel's first seed; limit=2 shard=1/2 is what `play --seed` records for the second.
    sub = make_submission(tmp_path / "one", "one", f"env={TTT}", "agent=random", *overrides)
    error = refused(sub)
    assert (error.file, error.field) == (str(sub / "manifest.json"), "config.limit")
    assert error.problem.startswith("plays only player_") and "a game entry plays both seats" in error.problem


# -- any edit --------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_edit_of_a_game_record_is_refused(duel: Path, data: st.DataObject) -> None:
    # Both seats' transcripts, the moves, outcome and totals: every leaf but the agent's word on tokens.
    refuses_any_edit(duel, data)


# -- build -----------------------------------------------------------------------------------


def test_build_verifies_a_game_entry_and_shows_it_in_the_games_section(ttt: Path, tmp_path: Path) -> None:
    from ragen_bench.leaderboard.build import build

    subs = tmp_path / "subs"
    make_submission(subs / "bandit", "bandit", "env=RAGEN/Bandit-v0", "agent=random", "limit=2")
    copy(ttt, subs)
    build(subs, tmp_path / "board")
    readme = (tmp_path / "board" / "README.md").read_text()
    assert "### TicTacToe: ladder" in readme and "| ttt | ttt | minimax | 6/256 seeds x 1 |" in readme
    assert "ttt" not in (tmp_path / "board" / "leaderboard.csv").read_text()  # no single-agent row
    # A tampered game entry stops the build as any other would.
    edit_record(subs / "ttt", 0, lambda r: r["game"].update(outcome="win"))
    with pytest.raises(LeaderboardError) as caught:
        build(subs, tmp_path / "board")
    assert caught.value.field == "game.outcome"


def test_build_of_game_entries_alone_is_one_clear_error(ttt: Path, tmp_path: Path) -> None:
    from ragen_bench.leaderboard.build import build

    copy(ttt, tmp_path / "subs")
    with pytest.raises(LeaderboardError) as caught:
        build(tmp_path / "subs", tmp_path / "board")
    assert caught.value.problem.startswith("holds only game entries; the leaderboard needs a single-agent entry too")


# -- a person's games ------------------------------------------------------------------------


def _play_game(session: Any) -> str:
    """Answer each question of the game on screen with its first legal move; the game's outcome."""
    status = r"up to 1 per turn · legal: ([A-C][1-3])"
    while True:
        found = session.expect(rf"{status}|episode over: (\w+)")
        if found[2]:
            return found[2]
        session.send(found[1].encode() + b"\r")


def test_a_persons_games_are_a_submittable_entry(tmp_path: Path) -> None:
    from .test_play import Session

    info = {"format": "ragen-bench/submission/v1", "model": "a person", "recipe": "human", "date": "2026-12-03",
            "contact": "tests", "trained_on_train_panels": False, "run_dir": "run"}
    # Two games, one from each seat: an entry.
    run = tmp_path / "human-ttt" / "run"
    session = Session(TTT, "--limit", "2", "--opponent", "random", "--out", str(run))
    outcomes = [_play_game(session)]
    session.expect(r"next: .* Enter plays it")
    session.send(b"\r")
    outcomes.append(_play_game(session))
    session.expect(r"run complete")
    assert session.wait() == 0
    (run.parent / "submission.json").write_text(json.dumps({**info, "name": "human-ttt"}))
    verified = verify(run.parent)
    assert [g["game"]["outcome"] for g in records(run)] == outcomes
    assert verified.summary["games"][0]["seat_player_0_games"] == 1
    assert verified.manifest["config"]["agent"]["name"] == "human"
    # One seed (`play --seed`) is one seat: refused, saying why.
    one = tmp_path / "human-one" / "run"
    session = Session(TTT, "--seed", "124", "--opponent", "random", "--out", str(one))
    _play_game(session)
    session.expect(r"run complete")
    assert session.wait() == 0
    (one.parent / "submission.json").write_text(json.dumps({**info, "name": "human-one"}))
    error = refused(one.parent)
    assert error.problem.startswith("plays only player_0") and "first 2 seeds (play --seed plays one)" in error.problem
