"""Bad input gets a clear error response, never a 500 or a traceback, and the server keeps serving.

Each test speaks the wire protocol directly (raw WebSocket frames, raw HTTP) to the tight server
(two sessions, a short idle timeout; conftest), and ends by checking a fresh session still plays.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import textwrap
import time

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests_openenv.conftest import TIGHT_IDLE_S, TIGHT_SESSIONS, exchange, ws_url

RESET = {"type": "reset", "data": {"seed": 7}}
A_REPLY = {"type": "step", "data": {"reply": "<think>up</think> <answer>Up</answer>"}}


def error(code: str, message: str) -> dict:
    return {"type": "error", "data": {"message": message, "code": code}}


def still_serving(url: str) -> None:
    """A new session resets and steps, and the server reports healthy."""
    with connect(ws_url(url)) as ws:
        assert exchange(ws, RESET)["type"] == "observation"
        assert exchange(ws, A_REPLY)["data"]["observation"]["info"]["valid"] is True
    assert httpx.get(f"{url}/health").json() == {"status": "healthy"}


def no_traceback(text: str) -> None:
    assert "Traceback" not in text and 'File "' not in text


def test_malformed_json_is_refused_and_the_session_goes_on(tight_server: str) -> None:
    with connect(ws_url(tight_server)) as ws:
        answer = exchange(ws, '{"type": "reset", "data": ')
        assert answer["data"]["code"] == "INVALID_JSON" and answer["data"]["message"].startswith("Invalid JSON: ")
        assert exchange(ws, "[1, 2")["data"]["code"] == "INVALID_JSON"
        assert exchange(ws, {"type": "jump"}) == error("UNKNOWN_TYPE", "Unknown message type: jump")
        assert exchange(ws, RESET)["type"] == "observation"
    still_serving(tight_server)


def test_unknown_session_is_refused(tight_server: str) -> None:
    with connect(ws_url(tight_server, "?session_id=no-such-session")) as ws:
        assert json.loads(ws.recv(timeout=30)) == error("SESSION_ERROR", "Unknown session_id: no-such-session")
    still_serving(tight_server)


def test_step_before_reset_and_after_done(tight_server: str) -> None:
    with connect(ws_url(tight_server)) as ws:
        assert exchange(ws, A_REPLY) == error("EXECUTION_ERROR", "step before reset: call reset first")
        exchange(ws, {"type": "reset", "data": {"env_id": "RAGEN/Bandit-v0", "seed": 3}})
        done = exchange(ws, {"type": "step", "data": {"reply": "<think>x</think> <answer>nothing</answer>"}})
        while not done["data"]["done"]:
            done = exchange(ws, {"type": "step", "data": {"reply": "no answer"}})
        assert exchange(ws, A_REPLY) == error("EXECUTION_ERROR", "the episode is over: call reset for a new one")
        assert exchange(ws, RESET)["data"]["done"] is False
    with httpx.Client(base_url=tight_server) as http:
        # Over plain HTTP every request gets a fresh env (OpenEnv's design): /step is a step before reset.
        answer = http.post("/step", json={"action": {"reply": "x"}})
        assert (answer.status_code, answer.json()) == (400, {"detail": "step before reset: call reset first"})
    still_serving(tight_server)


def test_bad_actions(tight_server: str) -> None:
    with connect(ws_url(tight_server)) as ws:
        exchange(ws, RESET)
        for data in ({"text": "Up"}, {"reply": 5}, {"reply": "x" * 65_537}, {}):
            answer = exchange(ws, {"type": "step", "data": data})
            assert answer["type"] == "error" and answer["data"]["code"] == "VALIDATION_ERROR", answer
        # An MCP tool call (OpenEnv's other action type) is no reply either.
        answer = exchange(ws, {"type": "step", "data": {"type": "call_tool", "tool_name": "step", "arguments": {}}})
        assert answer["data"]["code"] == "VALIDATION_ERROR"
        # A lone surrogate is no text (no UTF-8 answer could hold it); a surrogate pair is an emoji.
        answer = exchange(ws, {"type": "step", "data": {"reply": "<answer>\ud800</answer>"}})
        assert answer == error("VALIDATION_ERROR", "Invalid message: a string holds a lone surrogate (not Unicode text)")
        assert exchange(ws, {"type": "step", "data": {"reply": "<answer>\U0001f600</answer>"}})["type"] == "observation"
        # A reply the parser cannot read is no error: an invalid turn with the format penalty.
        answer = exchange(ws, {"type": "step", "data": {"reply": "\x00<answer>\u212a"}})
        assert answer["type"] == "observation"
        assert (answer["data"]["reward"], answer["data"]["observation"]["info"]["valid"]) == (-0.1, False)
        assert exchange(ws, A_REPLY)["type"] == "observation"
    with httpx.Client(base_url=tight_server) as http:
        answer = http.post("/step", json={"action": {"text": "Up"}})
        assert answer.status_code == 422
        no_traceback(answer.text)
    still_serving(tight_server)


@pytest.mark.parametrize(("request_data", "message"), [
    ({"seed": -1}, "RAGEN/Sokoban-6x6-v0: seed must be in 0..4294967295, got -1"),
    ({"seed": 2**64}, "RAGEN/Sokoban-6x6-v0: seed must be in 0..4294967295, got 18446744073709551616"),
    ({"seed": "7"}, "RAGEN/Sokoban-6x6-v0: seed must be an int or None, got '7' (str)"),
    ({"seed": True}, "RAGEN/Sokoban-6x6-v0: seed must be an int or None, got True (bool)"),
    ({}, "reset takes either seed=N or split=NAME with index=K (a panel item)"),
    ({"seed": 1, "split": "test", "index": 0}, "reset takes either seed=N or split=NAME with index=K (a panel item)"),
    ({"split": "test"}, "a panel item needs both split and index"),
    ({"split": "dev", "index": 0}, "split: RAGEN/Sokoban-6x6-v0 has panels ['train', 'val', 'test'], got 'dev'"),
    ({"split": "test", "index": 256}, "index: the test panel of RAGEN/Sokoban-6x6-v0 has items 0..255, got 256"),
    ({"split": "test", "index": -1}, "index: the test panel of RAGEN/Sokoban-6x6-v0 has items 0..255, got -1"),
    ({"seed": 1, "env_id": "RAGEN/Nope-v0"},
     "env_id: this server serves RAGEN/Sokoban-6x6-v0, RAGEN/Bandit-v0; got 'RAGEN/Nope-v0'"),
    ({"seed": 1, "path": "/etc/passwd"}, "reset takes seed, split, index, env_id and episode_id; got path"),
])
def test_bad_resets(tight_server: str, request_data: dict, message: str) -> None:
    with connect(ws_url(tight_server)) as ws:
        assert exchange(ws, {"type": "reset", "data": request_data}) == error("EXECUTION_ERROR", message)
        assert exchange(ws, RESET)["type"] == "observation"


def test_bad_resets_over_http(tight_server: str) -> None:
    with httpx.Client(base_url=tight_server) as http:
        negative = http.post("/reset", json={"seed": -1})
        assert negative.status_code == 422  # OpenEnv's own request model: seed >= 0
        huge = http.post("/reset", json={"seed": 2**64})
        assert (huge.status_code, huge.json()) == (
            400, {"detail": "RAGEN/Sokoban-6x6-v0: seed must be in 0..4294967295, got 18446744073709551616"})
        task = http.post("/Sokoban-6x6-v0+Bandit-v0/task", json={"split": "test", "index": 999})
        assert (task.status_code, task.json()) == (
            400, {"detail": "index: the test panel of RAGEN/Sokoban-6x6-v0 has items 0..255, got 999"})
        for answer in (negative, huge, task):
            no_traceback(answer.text)


def test_a_10_mb_message_closes_only_its_connection(tight_server: str) -> None:
    with connect(ws_url(tight_server)) as bystander:
        exchange(bystander, RESET)
        with connect(ws_url(tight_server), max_size=None) as ws:
            exchange(ws, RESET)
            ws.send(json.dumps({"type": "step", "data": {"reply": "x" * 10_000_000}}))
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=30)
            assert closed.value.rcvd.code == 1009  # RFC 6455: message too big
        assert exchange(bystander, A_REPLY)["type"] == "observation"
    with httpx.Client(base_url=tight_server) as http:
        answer = http.post("/step", content=b'{"action": {"reply": "' + b"x" * 10_000_000 + b'"}}',
                           headers={"content-type": "application/json"})
        assert (answer.status_code, answer.json()) == (413, {"detail": "request body above 1048576 bytes"})
    still_serving(tight_server)


def test_too_many_sessions(tight_server: str) -> None:
    with contextlib.ExitStack() as stack:
        held = [stack.enter_context(connect(ws_url(tight_server))) for _ in range(TIGHT_SESSIONS)]
        for ws in held:
            exchange(ws, RESET)
        with connect(ws_url(tight_server)) as extra:
            answer = json.loads(extra.recv(timeout=30))
        assert answer == {"type": "error", "data": {
            "message": f"Server at capacity: {TIGHT_SESSIONS}/{TIGHT_SESSIONS} sessions active. "
                       "Cannot accept new connections.", "code": "CAPACITY_REACHED",
            "active_sessions": TIGHT_SESSIONS, "max_sessions": TIGHT_SESSIONS}}
        for ws in held:  # the sessions held play on
            assert exchange(ws, A_REPLY)["type"] == "observation"
    still_serving(tight_server)


def test_a_client_that_vanishes_mid_episode_frees_its_session(tight_server: str) -> None:
    vanishing = textwrap.dedent(f"""
        import json, os, sys
        from websockets.sync.client import connect
        ws = connect({ws_url(tight_server)!r})
        ws.send(json.dumps({RESET!r})); ws.recv(timeout=30)
        ws.send(json.dumps({A_REPLY!r})); ws.recv(timeout=30)
        print("mid-episode", flush=True)
        sys.stdin.readline()
    """)
    with connect(ws_url(tight_server)) as bystander:
        exchange(bystander, RESET)
        client = subprocess.Popen([sys.executable, "-c", vanishing], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        assert client.stdout.readline().strip() == "mid-episode"
        client.send_signal(signal.SIGKILL)  # no close frame: the OS drops the socket
        client.wait()
        # Its slot comes back: the bystander plus a new session fill the two.
        deadline = time.monotonic() + 10
        while True:
            with connect(ws_url(tight_server)) as ws:
                answer = exchange(ws, RESET)
            if answer["type"] == "observation" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert answer["type"] == "observation", answer
        assert exchange(bystander, A_REPLY)["type"] == "observation"


def test_idle_sessions_are_closed_and_freed(tight_server: str) -> None:
    with connect(ws_url(tight_server)) as idle:
        exchange(idle, RESET)
        time.sleep(TIGHT_IDLE_S + 1)
        with pytest.raises(ConnectionClosed) as closed:
            idle.recv(timeout=5)
        assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (1001, f"idle for {TIGHT_IDLE_S:g} s: session closed")
    with contextlib.ExitStack() as stack:
        held = [stack.enter_context(connect(ws_url(tight_server))) for _ in range(TIGHT_SESSIONS)]
        assert all(exchange(ws, RESET)["type"] == "observation" for ws in held)
