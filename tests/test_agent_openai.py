"""The ``openai`` agent against a small in-process stand-in Chat Completions server.

The stand-in (``http.server`` in a thread, on 127.0.0.1) answers ``/v1/chat/completions``
from a script of behaviours per call ("ok", "500", "429", "slow", "garbage", "400", "401",
"403", "null", "refusal", "filtered", "answer", "length", "trickle-body", "trickle-headers", "hang"), records every
request body and header, and tracks how many requests were in flight at once.  Slow
behaviours end when the test ends (``StandIn.stop``), so no handler thread outlives it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("httpx")

from ragen_bench.agents import make_agent  # noqa: E402
from ragen_bench.agents.openai_compat import (  # noqa: E402
    CompletionError,
    RetryPolicy,
    make_openai_agent,
    parse_completion,
)
from ragen_bench.chat import AgentError, AgentRequest  # noqa: E402

SLOW_S = 10.0  # the "slow" behaviour answers after this long; agents under test give up 10x sooner
HANG_S = 30.0  # "hang" and the trickles last this long at most (the test's end stops them sooner)
TRICKLE_EVERY_S = 0.2


class StandIn:
    """State shared by the handler threads: the behaviour script and what was received."""

    def __init__(self) -> None:
        self.script: list[str] = []
        self.bodies: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.delay_s = 0.0
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def next_behaviour(self) -> str:
        with self.lock:
            return self.script.pop(0) if self.script else "ok"


def _handler(state: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep pytest output clean
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with state.lock:
                state.bodies.append(body)
                state.headers.append({k.lower(): v for k, v in self.headers.items()})
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
            try:
                self._answer(body, state.next_behaviour())
            finally:
                with state.lock:
                    state.in_flight -= 1

        def _answer(self, body: dict, behaviour: str) -> None:
            if self.path != "/v1/chat/completions":
                return self._send(404, b'{"error": "no such route"}')
            time.sleep(state.delay_s)
            if behaviour == "500":
                return self._send(500, b'{"error": "boom"}')
            if behaviour == "429":
                return self._send(429, b'{"error": "slow down"}', {"Retry-After": "0"})
            if behaviour == "400":
                return self._send(400, b'{"error": "bad request"}')
            if behaviour in ("401", "403"):
                return self._send(int(behaviour), b'{"error": "invalid api key"}')
            if behaviour == "garbage":
                return self._send(200, b"not json at all")
            if behaviour == "trickle-body":
                return self._trickle(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n", b" ")
            if behaviour == "trickle-headers":
                return self._trickle(b"HTTP/1.1 200 OK\r\n", b"X")
            if behaviour in ("slow", "hang"):
                if state.stop.wait(SLOW_S if behaviour == "slow" else HANG_S):
                    return None
            last = body["messages"][-1]["content"]
            message = {"role": "assistant", "content": f"echo:{last}"}
            if behaviour == "answer":  # a well-formed Sokoban reply
                message = {"role": "assistant", "content": "<think>up</think><answer>Up</answer>"}
            if behaviour in ("null", "refusal", "filtered"):
                refusal = "I can't." if behaviour == "refusal" else None
                message = {"role": "assistant", "content": None, "refusal": refusal}
            finish_reason = {"length": "length", "filtered": "content_filter"}.get(behaviour, "stop")
            reply = {
                "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
                "usage": {"prompt_tokens": len(last), "completion_tokens": len(last) + 5},
            }
            self._send(200, json.dumps(reply).encode())

        def _trickle(self, opening: bytes, drip: bytes) -> None:
            """Send ``opening``, then one byte every TRICKLE_EVERY_S: never a whole answer."""
            self.wfile.write(opening)
            deadline = time.monotonic() + HANG_S
            try:
                while time.monotonic() < deadline and not state.stop.wait(TRICKLE_EVERY_S):
                    self.wfile.write(drip)
                    self.wfile.flush()
            except OSError:  # the client gave up and closed the connection
                pass
            self.close_connection = True

        def _send(self, status: int, payload: bytes, extra: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)

    return Handler


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A threading HTTP server on 127.0.0.1 answering with ``handler``: its ``/v1`` base URL, shut down after."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def stand_in() -> Iterator[tuple[StandIn, str]]:
    state = StandIn()
    with serving(_handler(state)) as url:
        try:
            yield state, url
        finally:
            state.stop.set()  # slow behaviours end before the server shuts down


def _requests(n: int, episode: str = "RAGEN/Sokoban-6x6-v0/test") -> list[AgentRequest]:
    return [
        AgentRequest(
            messages=[{"role": "system", "content": "rules"}, {"role": "user", "content": f"state {i}"}],
            episode_key=f"{episode}/{i}/0",
            turn=1,
        )
        for i in range(n)
    ]


def _agent(url: str, **settings: object):
    defaults = dict(base_url=url, timeout_s=0.5, backoff_base_s=0.001, max_retries=3)
    return make_openai_agent("stand-in-model", **{**defaults, **settings})


def test_replies_follow_request_order_with_usage_counts(stand_in):
    state, url = stand_in
    agent = make_agent("openai", model="stand-in-model", base_url=url, max_concurrency=4)
    try:
        replies = agent.act(_requests(6))
    finally:
        agent.close()
    assert [r.text for r in replies] == [f"echo:state {i}" for i in range(6)]
    assert [r.prompt_tokens for r in replies] == [len(f"state {i}") for i in range(6)]
    assert [r.completion_tokens for r in replies] == [len(f"state {i}") + 5 for i in range(6)]


def test_sampling_settings_pass_through_with_per_episode_seeds(stand_in):
    state, url = stand_in
    agent = _agent(url, temperature=0.3, top_p=0.8, max_new_tokens=17, sampling_seed=7)
    try:
        agent.act(_requests(3))
        first_seeds = sorted(body["seed"] for body in state.bodies)
        agent.act(_requests(3))
    finally:
        agent.close()
    body = state.bodies[0]
    assert body["model"] == "stand-in-model"
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.3, 0.8, 17)
    assert body["messages"][0] == {"role": "system", "content": "rules"}
    assert len(set(first_seeds)) == 3, "each episode gets its own seed"
    assert sorted(body["seed"] for body in state.bodies[3:]) == first_seeds, "and the same one on a rerun"
    assert all(0 <= s < 2**31 for s in first_seeds)


def test_hostile_prompt_text_reaches_the_server_exactly(stand_in):
    # A lone surrogate from an earlier reply is in the conversation: UTF-8 cannot encode it,
    # so the body is ASCII JSON with escapes, which the server decodes back exactly.
    state, url = stand_in
    hostile = "<think>\ud83d</think>\x00 \u202e right-to-left \udfff \ufeff \U0001f600 e\u0301 \\ \""
    request = AgentRequest(
        messages=[
            {"role": "user", "content": "state"},
            {"role": "assistant", "content": hostile},
            {"role": "user", "content": hostile},
        ],
        episode_key="k/0",
        turn=2,
    )
    agent = _agent(url)
    try:
        (reply,) = agent.act([request])
    finally:
        agent.close()
    assert state.bodies[0]["messages"] == request.messages
    assert reply.text == "echo:" + hostile
    assert state.headers[0]["content-type"] == "application/json"


def test_seed_none_sends_no_seed(stand_in):
    state, url = stand_in
    agent = _agent(url, sampling_seed=None)
    try:
        agent.act(_requests(1))
    finally:
        agent.close()
    assert "seed" not in state.bodies[0]


def test_api_key_comes_from_the_named_env_var_and_stays_out_of_the_agent(stand_in, monkeypatch):
    state, url = stand_in
    secret = "sk-test-do-not-leak"
    monkeypatch.setenv("MY_SERVER_KEY", secret)
    agent = _agent(url, api_key_env="MY_SERVER_KEY")
    try:
        replies = agent.act(_requests(1))
    finally:
        agent.close()
    assert state.headers[0]["authorization"] == f"Bearer {secret}"
    visible = repr(vars(agent)) + agent.name + repr(agent.settings) + repr(replies)
    assert secret not in visible


def test_no_key_means_no_authorization_header(stand_in, monkeypatch):
    state, url = stand_in
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agent = _agent(url)
    try:
        agent.act(_requests(1))
    finally:
        agent.close()
    assert "authorization" not in state.headers[0]


@pytest.mark.parametrize("failure", ["500", "429", "slow", "garbage"])
def test_transient_failure_is_retried_then_succeeds(stand_in, failure):
    state, url = stand_in
    state.script = [failure]
    agent = _agent(url, timeout_s=SLOW_S / 10)
    try:
        (reply,) = agent.act(_requests(1))
    finally:
        agent.close()
    assert reply.text == "echo:state 0"
    assert len(state.bodies) == 2, "one failed attempt, one retry"


def test_gives_up_after_max_retries(stand_in):
    state, url = stand_in
    state.script = ["500"] * 10
    agent = _agent(url, max_retries=2)
    try:
        with pytest.raises(AgentError, match=f"{url}/chat/completions failed 3 attempts; last failure: HTTP 500"):
            agent.act(_requests(1))
    finally:
        agent.close()
    assert len(state.bodies) == 3


@pytest.mark.parametrize("status", ["400", "401", "403"])
def test_client_errors_fail_at_once_naming_url_and_status(stand_in, status):
    state, url = stand_in
    state.script = [status]
    agent = _agent(url, max_retries=5)
    try:
        with pytest.raises(AgentError, match=f"'openai:stand-in-model': HTTP {status} from {url}/chat/completions"):
            agent.act(_requests(1))
    finally:
        agent.close()
    assert len(state.bodies) == 1, "no retries: the same request would be refused again"


def test_unreachable_server_raises_after_retries():
    agent = _agent("http://127.0.0.1:9/v1", max_retries=1)  # port 9 (discard): nothing listens
    try:
        with pytest.raises(CompletionError, match="ConnectError"):
            agent.act(_requests(1))
    finally:
        agent.close()


def test_concurrency_is_bounded_but_used(stand_in):
    state, url = stand_in
    state.delay_s = 0.1
    agent = _agent(url, max_concurrency=3, timeout_s=5)
    try:
        replies = agent.act(_requests(9))
    finally:
        agent.close()
    assert len(replies) == 9
    assert state.max_in_flight == 3


@given(
    attempt=st.integers(0, 40),
    base=st.floats(0.001, 5),
    cap=st.floats(0.001, 60),
    seed=st.integers(0, 2**32),
)
def test_backoff_stays_within_its_exponential_ceiling(attempt, base, cap, seed):
    policy = RetryPolicy(base_s=base, cap_s=cap)
    delay = policy.delay(attempt, random.Random(seed))
    assert 0 <= delay <= min(cap, base * 2**attempt)


@given(retry_after=st.floats(-10, 1e6), cap=st.floats(0.001, 60))
def test_retry_after_is_honoured_within_the_cap(retry_after, cap):
    delay = RetryPolicy(cap_s=cap).delay(3, random.Random(0), retry_after)
    assert delay == min(cap, max(0.0, retry_after))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
)


CHOICES = st.lists(
    JSON_VALUES
    | st.fixed_dictionaries(
        {"message": JSON_VALUES | st.fixed_dictionaries({"content": JSON_VALUES, "refusal": JSON_VALUES}),
         "finish_reason": JSON_VALUES}
    )
)


@given(payload=JSON_VALUES | st.fixed_dictionaries({"choices": CHOICES, "usage": JSON_VALUES}))
def test_parse_completion_gives_a_valid_reply_or_value_error(payload):
    from ragen_bench.chat.protocol import reply_problem

    try:
        reply = parse_completion(payload)
    except ValueError:
        return
    assert reply_problem(reply) is None  # whatever the server sent, the reply keeps the protocol


@pytest.mark.parametrize(
    ("message", "finish_reason", "expected"),
    [
        # (text, finish_reason: the server's, null_content, refusal)
        ({"content": None}, "stop", ("", "stop", True, None)),
        ({"content": None, "refusal": "I can't help with that."}, "stop", ("", "stop", True, "I can't help with that.")),
        ({"content": None, "tool_calls": [{"id": "1", "type": "function"}]}, "tool_calls", ("", "tool_calls", True, None)),
        ({"content": None}, "content_filter", ("", "content_filter", True, None)),
        ({"content": None, "refusal": 7}, None, ("", None, True, None)),
        ({"content": "cut"}, "length", ("cut", "length", False, None)),
        ({"content": ""}, "content_filter", ("", "content_filter", False, None)),
        ({"content": "ok"}, 3, ("ok", None, False, None)),
    ],
)
def test_parse_completion_says_why_a_reply_ended(message, finish_reason, expected):
    reply = parse_completion({"choices": [{"message": message, "finish_reason": finish_reason}]})
    assert (reply.text, reply.finish_reason, reply.null_content, reply.refusal) == expected
    assert (reply.prompt_tokens, reply.completion_tokens) == (None, None)  # no usage block


@pytest.mark.parametrize(
    ("behaviour", "expected"),
    [
        ("null", ("", "stop", True, None)),
        ("refusal", ("", "stop", True, "I can't.")),
        ("filtered", ("", "content_filter", True, None)),
        ("length", ("echo:state 0", "length", False, None)),
    ],
)
def test_null_and_cut_replies_are_marked_not_silent(stand_in, behaviour, expected):
    state, url = stand_in
    state.script = [behaviour]
    agent = _agent(url)
    try:
        (reply,) = agent.act(_requests(1))
    finally:
        agent.close()
    assert (reply.text, reply.finish_reason, reply.null_content, reply.refusal) == expected
    assert len(state.bodies) == 1


@pytest.mark.usefixtures("wide_terminal")
def test_null_content_replies_are_recorded_penalized_and_counted_end_to_end(stand_in, tmp_path, capsys):
    # One episode, one request per turn, so the script's order is the turns' order: a refusal,
    # a content filter, a bare null, then a well-formed reply.
    from ragen_bench.cli import main
    from ragen_bench.eval import rundir

    state, url = stand_in
    state.script = ["refusal", "filtered", "null", "answer"]
    out = tmp_path / "run"
    args = ["eval", "env=RAGEN/Sokoban-6x6-v0", "limit=1", "chat.max_turns=4", "progress=false", f"out={out}",
            "agent=openai", "agent.model=stand-in-model", f"agent.base_url={url}", "++agent.max_retries=0"]
    assert main(args) == 0
    (record,) = rundir.read_episodes(out / rundir.EPISODES)
    refusal, filtered, null, answer = record["turns"]
    for turn in (refusal, filtered, null):
        assert turn["raw_response"] == "" and turn["null_content"] is True
        assert turn["valid"] is False and turn["format_penalty"] == -0.1  # malformed, like any unparseable reply
        assert turn["completion_tokens"] is not None  # the server's usage is kept
    assert (refusal["finish_reason"], refusal["refusal"]) == ("stop", "I can't.")
    assert filtered["finish_reason"] == "content_filter" and "refusal" not in filtered
    assert null["finish_reason"] == "stop" and "refusal" not in null
    assert answer["valid"] is True and "null_content" not in answer and "refusal" not in answer

    (group,) = rundir.read_json(out / rundir.SUMMARY)["groups"]
    assert group["null_content_replies"] == 3 and group["null_content_reply_rate"] == 3 / 4
    assert group["format_penalty_rate"] == 3 / 4
    capsys.readouterr()
    assert main(["compare", str(out)]) == 0
    header, row = capsys.readouterr().out.splitlines()[:2]
    end = header.index("null_replies") + len("null_replies")  # right-aligned under its title
    assert row[:end].split()[-1] == "3"


# -- deadlines and interruption -------------------------------------------------------------------


@pytest.mark.parametrize("behaviour", ["trickle-body", "trickle-headers"])
def test_a_trickling_server_cannot_hold_a_request_past_its_deadline(stand_in, behaviour):
    # httpx's timeouts are per read: one byte every 0.2 s would never trip a 0.5 s read
    # timeout.  The agent's deadline covers the whole request.  Expected ~0.5 s; bound 5 s.
    state, url = stand_in
    state.script = [behaviour]
    agent = _agent(url, timeout_s=0.5, max_retries=0)
    start = time.monotonic()
    try:
        with pytest.raises(AgentError, match=f"{url}/chat/completions failed 1 attempts.*timeout_s=0.5"):
            agent.act(_requests(1))
    finally:
        agent.close()
    assert time.monotonic() - start < 5.0
    assert len(state.bodies) == 1


def test_ctrl_c_stops_hanging_requests_at_once(stand_in):
    # Three requests hang for 30 s on a server the agent would wait 60 s for; a real SIGINT
    # (what Ctrl-C sends) after 0.3 s must end act() and close() promptly (bound 5 s, > 5x
    # what they take).
    state, url = stand_in
    state.script = ["hang"] * 3
    agent = _agent(url, timeout_s=60.0)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            agent.act(_requests(3))
        agent.close()
    finally:
        timer.cancel()
    assert time.monotonic() - start < 5.0
    assert len(state.bodies) == 3
    with pytest.raises(RuntimeError, match="closed"):
        agent.act(_requests(1))
