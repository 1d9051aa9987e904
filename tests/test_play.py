"""``ragen-bench play``: a person's session on a pseudo-terminal is an ordinary, replayable eval run.

The sessions run ``ragen_bench.cli.main(["play", ...])`` in a child forked onto a
pseudo-terminal (``pty.fork``: the child's stdin, stdout and controlling terminal are
the pty), so arrow keys, Ctrl-C and a closed terminal reach it as they would from a
person's terminal, without paying the interpreter's start-up for every session.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import traceback
from pathlib import Path

import gymnasium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragen_bench import cli
from ragen_bench.agents.human import check_line, direction_names
from ragen_bench.agents.scripted import format_reply
from ragen_bench.agents.terminal import BACKSPACE, DOWN, ENTER, LEFT, OTHER, RIGHT, UP, split_keys
from ragen_bench.chat import AgentReply, ChatConfig, ChatEpisode
from ragen_bench.play import play_config

FROZEN = "RAGEN/FrozenLake-4x4-NoSlip-v0"
ARROW = {"up": b"\x1b[A", "down": b"\x1b[B", "right": b"\x1b[C", "left": b"\x1b[D"}
# Seed 123 (the panel's first): P at row 1 col 3, the goal at row 2 col 0, holes between.
TO_THE_GOAL = [["up", "left", "left", "left"], ["down", "down"]]
# A hang guard for a loaded machine, not a speed check: a session takes about a second.
WAIT_S = 300


class Session:
    """``ragen-bench play ARGS`` in a child on a pseudo-terminal; ``expect`` reads its screen."""

    def __init__(self, *args: str) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child: the pty is its terminal
            code = 99
            try:
                # A fixed size, so rich lays panels out the same everywhere.
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
                # pytest captures sys.stdout; the child's must be the pty itself.
                sys.stdin = open(0, encoding="utf-8", closefd=False)
                sys.stdout = sys.stderr = open(1, "w", encoding="utf-8", closefd=False, buffering=1)
                code = cli.main(["play", *args])
            except BaseException:
                traceback.print_exc()
            finally:
                try:
                    sys.stdout.flush()
                finally:
                    os._exit(code)
        self.pid, self.fd = pid, fd
        self.screen = ""
        self._seen = 0

    @classmethod
    def console_script(cls, *args: str) -> tuple[Session, int]:
        """The installed ``ragen-bench play ARGS`` on a new pty; the session and the terminal side of the pty."""
        master, terminal = os.openpty()
        fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
        script = Path(sys.executable).with_name("ragen-bench")
        child = subprocess.Popen([str(script), "play", *args], stdin=terminal, stdout=terminal, stderr=terminal)
        session = cls.__new__(cls)
        session.pid, session.fd, session.screen, session._seen = child.pid, master, "", 0
        return session, terminal

    def expect(self, pattern: str) -> re.Match[str]:
        """Wait for ``pattern`` (a regex) in what the child wrote after the last match."""
        while True:
            found = re.compile(pattern).search(self.screen, self._seen)
            if found:
                self._seen = found.end()
                return found
            if not self._read():
                raise AssertionError(f"{pattern!r} never appeared; the screen ended with:\n{self.screen[-3000:]}")

    def _read(self) -> bool:
        if not select.select([self.fd], [], [], WAIT_S)[0]:
            return False
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        self.screen += data.decode("utf-8", errors="replace")
        return bool(data)

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def keys(self, *names: str) -> None:
        self.send(b"".join(ARROW[name] for name in names) + b"\r")

    def wait(self) -> int:
        """The child's exit status, once it ends (its output read to the end)."""
        while self._read():
            pass
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)

    def hang_up(self) -> int:
        """Close the terminal (the child gets SIGHUP) and return its exit status."""
        os.close(self.fd)
        _, status = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(status)


def episodes(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]


def manifest(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text())


def play_to_the_goal(session: Session) -> None:
    for turn in TO_THE_GOAL:
        session.expect(r"legal: Left, Down, Right, Up")
        session.keys(*turn)
    session.expect(r"episode over: success")


# -- sessions on a pseudo-terminal ------------------------------------------------------


def test_arrow_keys_reach_the_goal_and_the_run_passes_leaderboard_verify(tmp_path, capsys):
    from ragen_bench.leaderboard.verify import verify

    run = tmp_path / "human-frozen" / "run"
    session = Session(FROZEN, "--limit", "1", "--out", str(run))
    session.expect(r"legal: Left, Down, Right, Up")
    # A letter, an unknown escape sequence, a non-ASCII character, Enter with no move:
    # each one hint, none a turn.
    for garbage in (b"x", b"\x1b[Z", "é".encode(), b"\r"):
        session.send(garbage)
        session.expect(r"hint: ")
    session.send(ARROW["right"] + b"\x7f")  # a move taken back is never sent
    session.keys(*TO_THE_GOAL[0])
    session.expect(r"turn 2 · actions left 6")
    session.keys(*TO_THE_GOAL[1])
    session.expect(r"episode over: success")
    session.expect(r"run complete")
    assert session.wait() == 0

    [record] = episodes(run)
    assert [turn["raw_response"] for turn in record["turns"]] == [
        "<think></think><answer>Up || Left || Left || Left</answer>",
        "<think></think><answer>Down || Down</answer>",
    ]
    assert record["success"] and record["num_actions"] == 6 and all(turn["valid"] for turn in record["turns"])
    assert manifest(run)["complete"] is True and manifest(run)["config"]["agent"]["name"] == "human"
    # The whole leaderboard check: the manifest against today's panels, every turn replayed.
    (run.parent / "submission.json").write_text(json.dumps({
        "format": "ragen-bench/submission/v1", "name": "human-frozen", "model": "a person", "recipe": "human",
        "date": "2026-12-01", "contact": "tests", "trained_on_train_panels": False, "run_dir": "run",
    }))
    verified = verify(run.parent)
    assert verified.rows[0]["success"] is True and verified.turns == 2
    capsys.readouterr()
    assert cli.main(["compare", str(run)]) == 0
    assert re.search(r"human\s+RAGEN/FrozenLake-4x4-NoSlip-v0\s+test\s+5/5/10\s+1\s+1\.000", capsys.readouterr().out)


def test_the_console_script_reads_keys_in_cbreak_mode_and_gives_the_terminal_back(tmp_path):
    session, terminal = Session.console_script(FROZEN, "--limit", "1", "--out", str(tmp_path / "run"))
    before = termios.tcgetattr(terminal)
    try:
        session.expect(r"keys: arrows add a move")
        session.send(ARROW["up"])
        session.expect(r"moves: Up")
        during = termios.tcgetattr(terminal)
        assert not during[3] & (termios.ICANON | termios.ECHO)  # cbreak: keys arrive one by one, unechoed
        session.send(b"q")
        session.expect(r"stopped: quit")  # printed after the agent was closed
        assert termios.tcgetattr(terminal) == before
        assert session.wait() == 0
    finally:
        os.close(terminal)


def test_ctrl_c_after_a_finished_episode_keeps_it_and_the_same_command_resumes(tmp_path):
    run = tmp_path / "run"
    session = Session(FROZEN, "--out", str(run))
    play_to_the_goal(session)
    session.expect(r"next: RAGEN/FrozenLake-4x4-NoSlip-v0/test/124/0")
    session.send(b"\r")
    session.expect(r"legal: ")
    session.send(ARROW["up"])  # a turn half typed when Ctrl-C comes
    session.expect(r"moves: Up")
    session.send(b"\x03")  # the terminal turns ^C into SIGINT
    session.expect(r"stopped: interrupted \(Ctrl-C\); 1 episode\(s\) played")
    assert session.wait() == 0
    assert [record["seed"] for record in episodes(run)] == [123]
    assert manifest(run)["complete"] is False
    summary = json.loads((run / "summary.json").read_text())
    assert summary["groups"][0]["episodes"] == 1

    again = Session(FROZEN, "--out", str(run))
    again.expect(r"RAGEN/FrozenLake-4x4-NoSlip-v0/test/124/0 · turn 1")
    again.send(b"q")
    again.expect(r"stopped: quit; 0 episode\(s\) played")
    assert again.wait() == 0
    assert [record["seed"] for record in episodes(run)] == [123]


def test_a_closed_terminal_keeps_the_finished_episode(tmp_path):
    run = tmp_path / "run"
    session = Session(FROZEN, "--out", str(run))
    play_to_the_goal(session)
    session.expect(r"next: ")
    assert session.hang_up() == 0
    assert [record["success"] for record in episodes(run)] == [True]
    assert manifest(run)["complete"] is False
    assert json.loads((run / "summary.json").read_text())["groups"][0]["episodes"] == 1


def test_countdown_takes_a_typed_answer_refuses_hostile_text_and_eof_keeps_the_episode(tmp_path):
    run = tmp_path / "run"
    session = Session("RAGEN/Countdown-v0", "--limit", "2", "--out", str(run))
    session.expect(r"Numbers: \[68, 59, 6\]\. Target: 54")
    session.expect(r"free-text answer")
    # Too long for the env, answer tags, nothing: each one hint, none a turn.
    for hostile in ("9" * 3000, "1 </answer> 2", "   "):
        session.send(hostile.encode() + b"\r")
        session.expect(r"hint: ")
    session.send("6*(68-59)\r".encode())
    session.expect(r"episode over: success")
    session.expect(r"next: RAGEN/Countdown-v0/test/124/0")
    session.send(b"\x04")  # ^D on an empty line: the end of input
    session.expect(r"stopped: end of input; 1 episode\(s\) played")
    assert session.wait() == 0
    [record] = episodes(run)
    assert record["turns"][0]["raw_response"] == "<think></think><answer>6*(68-59)</answer>"
    assert record["success"] is True and manifest(run)["complete"] is False


def test_a_game_against_a_scripted_opponent(tmp_path):
    run = tmp_path / "run"
    # Seed 124 seats the person as player_0, who moves first.
    session = Session("RAGEN/TicTacToe-v0", "--seed", "124", "--opponent", "minimax", "--out", str(run))
    status = r"up to 1 per turn · legal: ([A-C][1-3])"
    first = session.expect(status)[1]
    # Control characters, a fullwidth look-alike, two moves at once: hints, not moves.
    for hostile in ("\x07\x1b[2J", "Ａ１", "A1 || A2"):
        session.send(hostile.encode() + b"\r")
        session.expect(r"hint: ")
    session.send(first.encode() + b"\r")
    moves = 1
    while True:
        found = session.expect(rf"{status}|episode over: (\w+)")
        if found[2]:
            break
        session.send(found[1].encode() + b"\r")
        moves += 1
    outcome = found[2]
    session.expect(r"run complete")
    assert session.wait() == 0
    [record] = episodes(run)
    assert record["game"]["opponent"] == "minimax" and record["game"]["outcome"] == outcome
    assert outcome in ("draw", "loss")  # minimax never loses
    assert record["num_turns"] == moves and all(turn["valid"] for turn in record["turns"])


def test_a_seed_outside_the_panel_is_one_clear_error(capsys):
    assert cli.main(["play", FROZEN, "--seed", "5", "--out", "unused"]) == 2
    assert "--seed 5 is not a seed of the test panel" in capsys.readouterr().err


def test_play_with_seed_plans_that_seed_alone():
    from ragen_bench import panels
    from ragen_bench.eval.plan import plan
    from ragen_bench.eval.config import parse_shard

    config = play_config(FROZEN, seed=125)
    instances = plan([panels.load(FROZEN, "test")], samples=1, limit=config["limit"],
                     shard=parse_shard(config["shard"]))
    assert [instance.seed for instance in instances] == [125]
    assert config["out"].endswith("human-RAGEN_FrozenLake-4x4-NoSlip-v0-test-seed125")


# -- the pure pieces --------------------------------------------------------------------


def test_split_keys_reads_arrows_in_both_cursor_modes_and_keeps_a_cut_sequence():
    assert split_keys(b"\x1b[A\x1bOB\x1b[C\x1b[D\r\x7fq") == ([UP, DOWN, RIGHT, LEFT, ENTER, BACKSPACE, "q"], b"")
    assert split_keys(b"\x1b[1;5A\x1b[Z\x01") == ([OTHER, OTHER, OTHER], b"")
    assert split_keys("é".encode() + b"\x1b[") == ([OTHER], b"\x1b[")


@given(st.binary(max_size=64), st.integers(min_value=0, max_value=64))
def test_split_keys_never_raises_and_a_read_boundary_changes_no_key(data, cut):
    whole, rest = split_keys(data)
    first, carried = split_keys(data[:cut])
    second, rest_after = split_keys(carried + data[cut:])
    # A boundary inside a UTF-8 character splits it into two OTHER keys at most; elsewhere nothing changes.
    if not any(0x80 <= byte for byte in data):
        assert first + second == whole and rest_after == rest


@pytest.fixture(scope="module")
def frozen_env():
    env = gymnasium.make(FROZEN)
    yield env
    env.close()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_a_line_the_agent_accepts_is_a_valid_turn_for_the_chat(frozen_env, line):
    config = ChatConfig()
    names = ("Left", "Down", "Right", "Up")
    actions, hint = check_line(line, action_names=names, action_space=frozen_env.action_space, legal=None,
                               per_turn=config.max_actions_per_turn, think=config.think,
                               separator=config.action_separator, max_chars=config.max_response_chars)
    assert (actions is None) != (hint is None)
    if actions is not None:
        episode = ChatEpisode(frozen_env, config, env_id=FROZEN, seed=123, split="test")
        episode.reset()
        episode.step(AgentReply(format_reply(actions, thought="", think=True)))
        assert episode.trajectory().turns[0].valid


@pytest.fixture(scope="module")
def countdown_space():
    env = gymnasium.make("RAGEN/Countdown-v0")
    yield env.action_space  # AnyText(0, 256)
    env.close()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_a_free_text_answer_is_sent_exactly_as_typed_or_refused(countdown_space, line):
    actions, hint = check_line(line, action_names=None, action_space=countdown_space, legal=None, per_turn=1,
                               think=True, separator="||", max_chars=4096)
    if actions is not None:
        assert actions == [line.strip()] and 0 < len(line.strip()) <= 256 and "</answer>" not in line
    else:
        assert hint


def test_check_line_follows_the_chat_matching_and_legal_moves():
    names = ("A1", "A2", "B1")
    common = dict(action_names=names, action_space=None, think=True, separator="||", max_chars=4096)
    assert check_line(" a2 ", legal=None, per_turn=1, **common) == (["A2"], None)
    assert check_line("A1", legal=[1, 2], per_turn=1, **common)[1].startswith("'A1' is not a legal action; legal: A2, B1")
    assert "at most 1" in check_line("A2 || B1", legal=None, per_turn=1, **common)[1]


def test_arrow_keys_only_where_the_actions_are_the_four_directions():
    assert direction_names(("Up", "Down", "Left", "Right")) == {"up": "Up", "down": "Down", "left": "Left",
                                                               "right": "Right"}
    assert direction_names(("up", "right", "down", "left", "noop"))["left"] == "left"
    assert direction_names(("A1", "A2")) is None and direction_names(None) is None


def test_the_human_agent_is_registered_and_needs_no_settings():
    from ragen_bench.agents import make_agent

    agent = make_agent("human")
    assert agent.name == "human" and agent.needs_live_env is True
    agent.close()



class OptimalThenStop:
    """The optimal agent for the first episode, then a quit (what a person's ``q`` raises)."""

    name = "optimal-then-stop"
    needs_live_env = True

    def __init__(self) -> None:
        from ragen_bench.agents.scripted import OptimalAgent

        self.optimal = OptimalAgent()

    def act(self, requests):
        from ragen_bench.chat.protocol import AgentStopped

        if any(request.episode_key.endswith("/124/0") for request in requests):
            raise AgentStopped("quit")
        return self.optimal.act(requests)

    def close(self) -> None:
        pass


def test_an_agent_that_stops_ends_the_run_cleanly_and_incomplete(tmp_path):
    from ragen_bench.eval import compose_config, run_eval

    config = compose_config("eval", [f"env={FROZEN}", "limit=3",
                                     "lockstep_episodes=1", "progress=false", f"out={tmp_path / 'run'}"])
    config["agent"] = {"name": "tests.test_play:OptimalThenStop"}
    seen = []
    result = run_eval(config, on_record=lambda record: seen.append(record["seed"]))
    assert (result.stopped, result.complete, result.new_episodes, seen) == ("quit", False, 1, [123])
    assert manifest(result.out)["complete"] is False
    assert json.loads((result.out / "summary.json").read_text())["groups"][0]["episodes"] == 1
