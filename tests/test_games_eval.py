"""`ragen-bench eval` on multi-agent games: opponents, alternating seats, game metrics, resume/shards/merge."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("pettingzoo")

from ragen_bench.chat import AgentReply  # noqa: E402
from ragen_bench.cli import main  # noqa: E402
from ragen_bench.eval import merge_runs, rundir, run_eval  # noqa: E402
from ragen_bench.eval.compose import compose_config  # noqa: E402
from ragen_bench.eval.config import ConfigError, load  # noqa: E402
from ragen_bench.eval.games import summarize_games, table_rows  # noqa: E402
from ragen_bench.eval.report import format_table  # noqa: E402

TTT = "RAGEN/TicTacToe-v0"
HERE = "tests.test_games_eval"
_LEGAL = re.compile(r"Legal moves: ([^\n]*)\.")


class FirstLegal:
    """Plays the first legal move its prompt lists (a text-reading agent, no privileges)."""

    name = "first-legal"

    def act(self, requests):
        replies = []
        for request in requests:
            found = _LEGAL.findall(request.messages[-1]["content"])
            replies.append(AgentReply(f"<think>t</think><answer>{found[-1].split(', ')[0] if found else 'x'}</answer>"))
        return replies

    def close(self):
        pass


def first_legal():
    return FirstLegal()


class Filtered:
    """Every reply is a server's null content (a content filter). Test only."""

    name = "filtered"

    def act(self, requests):
        return [AgentReply("", null_content=True, finish_reason="content_filter") for _ in requests]

    def close(self):
        pass


def filtered():
    return Filtered()


def config(out: Path, *overrides: str) -> dict:
    return compose_config(
        "eval", [f"env={TTT}", "limit=6", f"out={out}", "progress=false", f"agent.name={HERE}:first_legal",
                 "~agent.think", "~agent.max_actions_per_turn", "~agent.separator", *overrides],
    )


def records(out: Path) -> list[dict]:
    return rundir.read_episodes(out / rundir.EPISODES)


def test_game_eval_alternates_seats_and_reports_outcomes(tmp_path):
    result = run_eval(config(tmp_path / "run", "opponent=minimax"))
    assert result.complete and result.new_episodes == 6
    games = records(tmp_path / "run")
    assert [g["game"]["agent_seat"] for g in sorted(games, key=lambda g: g["seed"])] == ["player_1", "player_0"] * 3
    assert {g["game"]["outcome"] for g in games} <= {"draw", "loss"}  # minimax never loses
    assert all(g["success"] == (g["game"]["outcome"] == "win") for g in games)
    assert all(g["game"]["opponent"] == "minimax" and g["game"]["opponent_trajectory"] is None for g in games)
    (summary,) = result.summary["games"]
    assert summary["games"] == 6 and summary["win_rate"] == 0.0
    assert summary["draw_rate"] + summary["loss_rate"] == 1.0
    assert summary["loss_ci95"][0] <= summary["loss_rate"] <= summary["loss_ci95"][1]
    assert summary["illegal_move_rate"] == 0.0 and summary["seat_player_0_games"] == 3
    assert summary["mean_game_length"] == sum(len(g["game"]["moves"]) for g in games) / 6
    on_disk = json.loads((tmp_path / "run" / rundir.SUMMARY).read_text())
    assert on_disk["games"] == result.summary["games"]
    # Resuming finds everything done.
    again = run_eval(config(tmp_path / "run", "opponent=minimax"))
    assert again.new_episodes == 0 and again.summary == result.summary


def test_shards_merge_into_the_unsharded_run(tmp_path):
    whole = run_eval(config(tmp_path / "whole", "opponent=random"))
    for index in (0, 1):
        run_eval(config(tmp_path / f"s{index}", "opponent=random", f"shard={index}/2"))
    merged = merge_runs([tmp_path / "s0", tmp_path / "s1"], tmp_path / "merged")
    assert merged["groups"] == whole.summary["groups"]
    assert summarize_games(records(tmp_path / "merged")) == whole.summary["games"]
    assert merged["games"] == whole.summary["games"]
    assert json.loads((tmp_path / "merged" / "summary.json").read_text())["games"] == whole.summary["games"]


@pytest.mark.usefixtures("wide_terminal")
def test_cli_compare_and_merge_show_the_games_table(tmp_path, capsys):
    # One agent against two opponents: the main table's rows both read "first-legal"; the games table tells them apart.
    for opponent in ("minimax", "random"):
        run_eval(config(tmp_path / opponent, f"opponent={opponent}", "limit=2"))
    assert main(["compare", str(tmp_path / "minimax"), str(tmp_path / "random")]) == 0
    games = capsys.readouterr().out.split("\n\n")[1].splitlines()
    assert games[0].split()[:4] == ["run", "env", "split", "opponent"]
    assert [line.split()[3] for line in games[1:]] == ["minimax", "random"]
    assert games[1].split()[0] == str(tmp_path / "minimax")
    run_eval(config(tmp_path / "s0", "opponent=random", "limit=2", "shard=0/2"))
    run_eval(config(tmp_path / "s1", "opponent=random", "limit=2", "shard=1/2"))
    assert main(["merge", "--out", str(tmp_path / "merged"), str(tmp_path / "s0"), str(tmp_path / "s1")]) == 0
    assert "\nenv                 split  opponent  games" in capsys.readouterr().out


def test_an_agent_config_as_opponent_records_both_transcripts(tmp_path):
    result = run_eval(config(tmp_path / "run", f"opponent={{name: '{HERE}:first_legal'}}"))
    games = records(tmp_path / "run")
    for game in games:
        rival = game["game"]["opponent_trajectory"]
        assert rival is not None and rival["messages"][0]["role"] == "system"
        assert game["game"]["opponent"] == f"agent:{HERE}:first_legal"
    # First-legal against itself is the same game every time: X wins on move 7.
    assert {(g["game"]["agent_seat"], g["game"]["outcome"]) for g in games} == {("player_0", "win"), ("player_1", "loss")}
    assert result.summary["games"][0]["win_rate"] == 0.5


@pytest.mark.parametrize(("env_id", "games"), [(TTT, 64), ("RAGEN/ConnectFour-v0", 32), ("RAGEN/PrisonersDilemma-v0", 16)])
def test_the_random_reference_agent_plays_legal_moves_only(tmp_path, env_id, games):
    """agent=random draws among the legal moves (the action mask): never an occupied cell or full column.

    No retries, so a single illegal move would forfeit a game; the draws are seeded (a re-run is identical).
    """
    def run(out):
        return run_eval(compose_config("eval", [f"env={env_id}", f"limit={games}", f"out={out}", "progress=false",
                                                "agent=random", "opponent=random", "game.max_retries=0"]))

    (summary,) = run(tmp_path / "a").summary["games"]
    assert summary["games"] == games and summary["forfeits"] == 0 and summary["illegal_move_rate"] == 0.0
    games_played = records(tmp_path / "a")
    assert all(turn["valid"] and "fallback" not in (turn["info"] or {}) for g in games_played for turn in g["turns"])
    assert len({outcome for g in games_played for outcome in [g["game"]["outcome"]]}) > 1  # it does play at random
    run(tmp_path / "b")
    assert (tmp_path / "a" / rundir.EPISODES).read_bytes() == (tmp_path / "b" / rundir.EPISODES).read_bytes()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["env=RAGEN/Sokoban-6x6-v0", "opponent=minimax"], "opponent: only multi-agent games"),
        (["env=RAGEN/Sokoban-6x6-v0", "game.max_retries=5"], "game: only multi-agent games"),
        (["opponent=strong"], "no scripted player 'strong'; known: random, minimax"),
        (["opponent=3"], "opponent must be a scripted player's name or an agent config"),
        (["game.on_illegal=pass"], "game: on_illegal must be one of"),
        (["game.max_retries=-1"], "game: max_retries must be an int in 0..10"),
        (["+game.bonus=1"], "unknown key game.bonus"),
        (["+env_kwargs.board=4"], "env_kwargs {'board': 4} for RAGEN/TicTacToe-v0"),
        (["env=RAGEN/PrisonersDilemma-v0", "+env_kwargs.max_rounds=0"], "min_rounds <= max_rounds"),
        (["split=holdout"], "split: RAGEN/TicTacToe-v0 has no 'holdout' panel"),
        (["agent.name=optimal"], "agent: optimal plays single-agent envs only"),
        (["opponent={name: optimal}"], "opponent: optimal plays single-agent envs only"),
        (["agent.name=baseline"], "agent: baseline plays single-agent envs only"),
        (["env=RAGEN/TA-SecretMafia-v0", "opponent={name: random}"],
         "opponent: RAGEN/TA-SecretMafia-v0 has 6 seats; an agent opponent plays two-player games only"),
    ],
)
def test_bad_game_settings_are_refused_before_anything_is_written(tmp_path, overrides, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        run_eval(config(tmp_path / "run", *overrides))
    assert not (tmp_path / "run").exists()


def test_single_agent_runs_keep_their_identity_without_the_game_keys(tmp_path):
    sokoban = compose_config("eval", ["env=RAGEN/Sokoban-6x6-v0", f"out={tmp_path}"])
    assert "opponent" not in load(sokoban).identity and "game" not in load(sokoban).identity
    game = load(config(tmp_path, "opponent=minimax")).identity
    assert game["opponent"] == "minimax" and game["game"] == {"max_retries": 2, "on_illegal": "forfeit"}


def test_a_game_run_checks_its_chat_settings_once(tmp_path, chat_checks):
    assert run_eval(config(tmp_path, "limit=2")).new_episodes == 2
    assert len(chat_checks) == 1


@pytest.mark.parametrize(
    ("overrides", "label", "agent"),
    [
        ([], "minimax", None),  # null: the game's default scripted player
        (["opponent=random"], "random", None),
        (["opponent={name: random}"], "agent:random", {"name": "random"}),
    ],
)
def test_a_game_config_names_its_opponent_once(tmp_path, overrides, label, agent):
    run = load(config(tmp_path, *overrides))
    assert (run.opponent, run.opponent_agent) == (label, agent)
    assert run.game is not None and run.game.chat is run.chat
    assert run.template_hash == run.game.template_hash() != run.chat.template_hash()


@pytest.mark.usefixtures("wide_terminal")
def test_cli_eval_and_envs_list_show_the_games(tmp_path, capsys):
    assert main(["envs", "list"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in ("RAGEN/TicTacToe-v0", "RAGEN/ConnectFour-v0", "RAGEN/PrisonersDilemma-v0"))
    code = main(["eval", f"env={TTT}", "limit=2", f"out={tmp_path}", "progress=false", f"agent.name={HERE}:first_legal",
                 "~agent.think", "~agent.max_actions_per_turn", "~agent.separator"])
    printed = capsys.readouterr().out
    assert code == 0 and "2 new episodes; run complete" in printed
    header = next(line for line in printed.splitlines() if line.startswith("env "))
    assert header.split() == ["env", "split", "opponent", "games", "win", "win", "ci95", "draw", "draw", "ci95",
                              "loss", "loss", "ci95", "illegal", "forfeits", "null_replies", "length"]
    assert main(["envs", "show", "RAGEN/PrisonersDilemma-v0", "--seed", "124"]) == 0
    shown = capsys.readouterr().out
    assert "opponents: random, tit_for_tat, always_cooperate, always_defect (default tit_for_tat)" in shown
    assert "seed 124:\nenv: RAGEN/PrisonersDilemma-v0\nseed: 124\nagent seat: player_0\nrounds: 10\n" in shown


@pytest.mark.usefixtures("wide_terminal")
def test_null_content_replies_are_counted_and_shown_in_the_games_table(tmp_path, capsys):
    # No content ever: each game is 1 + 2 retries of null replies, then a forfeit.
    code = main(["eval", f"env={TTT}", "limit=2", f"out={tmp_path / 'run'}", "progress=false",
                 f"agent.name={HERE}:filtered", "opponent=minimax", "~agent.think", "~agent.max_actions_per_turn",
                 "~agent.separator"])
    printed = capsys.readouterr().out
    assert code == 0
    summary = json.loads((tmp_path / "run" / rundir.SUMMARY).read_text())
    (games,) = summary["games"]
    (group,) = summary["groups"]
    assert games["forfeits"] == 2 and games["illegal_move_rate"] == 1.0
    assert games["null_content_replies"] == group["null_content_replies"] == 6
    lines = printed.splitlines()
    header = next(index for index, line in enumerate(lines) if line.startswith("env ") and "forfeits" in line)
    assert _cell(lines[header], lines[header + 1], "null_replies") == "6"
    assert main(["compare", str(tmp_path / "run")]) == 0
    assert "null_replies" in capsys.readouterr().out.split("\n\n")[1]


def test_games_tables_of_older_runs_show_no_null_reply_count():
    (games,) = summarize_games([_record("win", [True], 5)])
    assert games["null_content_replies"] == 0
    del games["null_content_replies"]  # summary.json written before the field existed
    (row,) = table_rows([games])
    assert row["null_replies"] is None
    assert _cell(*format_table([row]).splitlines(), "null_replies") == "-"


def _cell(header: str, line: str, title: str) -> str:
    """The cell under ``title`` of a table line (a right-aligned value no wider than its title)."""
    start = header.index(title)
    return line[start:start + len(title)].strip()


def _record(outcome: str, valid: list[bool], moves: int, seat: str = "player_0", forfeit: str | None = None) -> dict:
    return {
        "env_id": TTT, "split": "test", "turns": [{"valid": v} for v in valid],
        "game": {"opponent": "minimax", "outcome": outcome, "agent_seat": seat, "forfeit": forfeit,
                 "moves": [["player_0", 0]] * moves},
    }


def test_game_summary_numbers_by_hand():
    (summary,) = summarize_games([
        _record("win", [True, True], 5),
        _record("draw", [True, False, True], 9, seat="player_1"),
        _record("loss", [False, False, False], 0, forfeit="player_0"),
        _record("loss", [True], 6, seat="player_1"),
    ])
    assert (summary["win_rate"], summary["draw_rate"], summary["loss_rate"]) == (0.25, 0.25, 0.5)
    assert summary["win_ci95"] == pytest.approx([0.0456, 0.6994], abs=1e-4)  # Wilson, 1 of 4
    assert summary["loss_ci95"] == pytest.approx([0.1500, 0.8500], abs=1e-4)  # Wilson, 2 of 4
    assert summary["illegal_move_rate"] == 4 / 9 and summary["forfeits"] == 1
    assert summary["mean_game_length"] == 5.0 and summary["seat_player_0_games"] == 2


def test_a_cut_log_resumes_to_the_same_summary(tmp_path):
    first = run_eval(config(tmp_path, "opponent=random"))
    log = tmp_path / rundir.EPISODES
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:4]) + lines[4][:30])  # two games lost, one line torn
    again = run_eval(config(tmp_path, "opponent=random"))
    assert again.new_episodes == 2 and again.summary == first.summary
