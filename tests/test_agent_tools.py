"""Agents in tools mode: tool calls read from a local model's text, and the ``openai`` agent against a fake server.

The fake OpenAI-compatible server (``http.server`` in a thread, on 127.0.0.1) records each request body
and answers with what the test's ``answer`` function makes of it; an eval run through it is then
verified by replay, as a leaderboard submission is.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragen_bench.agents.tool_text import (
    CALL_CLOSE,
    CALL_OPEN,
    renders_tools,
    split_tool_calls,
    template_messages,
)
from ragen_bench.chat import AgentError, AgentRequest
from ragen_bench.chat.tools import act_tool, call_actions

pytest.importorskip("httpx")

from .test_agent_openai import serving  # noqa: E402

SOKOBAN = "RAGEN/Sokoban-6x6-v0"
TOOLS = act_tool(("Up", "Down", "Left", "Right"), 5)


def hermes(payload: object) -> str:
    return f"{CALL_OPEN}\n{json.dumps(payload)}\n{CALL_CLOSE}"


# -- tool calls in a local model's text ------------------------------------------------------------


def test_a_hermes_call_becomes_an_openai_call_and_the_text_around_it_stays():
    text, calls = split_tool_calls("<think>go up</think>\n" + hermes({"name": "act", "arguments": {"actions": ["Up"]}}))
    assert text == "<think>go up</think>"
    assert calls == [{"id": "call_0", "type": "function",
                      "function": {"name": "act", "arguments": '{"actions": ["Up"]}'}}]
    assert call_actions(calls, max_actions=5, max_chars=4096) == ("Up",)


def test_parameters_and_string_arguments_are_read_like_arguments():
    (by_parameters,) = split_tool_calls(hermes({"name": "act", "parameters": {"actions": ["Left"]}}))[1]
    (as_text,) = split_tool_calls(hermes({"name": "act", "arguments": '{"actions": ["Left"]}'}))[1]
    assert by_parameters["function"]["arguments"] == as_text["function"]["arguments"] == '{"actions": ["Left"]}'


@pytest.mark.parametrize("text", [
    f"{CALL_OPEN} not json {CALL_CLOSE}",
    f"{CALL_OPEN}" + '{"name": "act", "arguments": {"actions": ["Up"]}}',  # cut before its end
    f"{CALL_OPEN}[1, 2]{CALL_CLOSE}",
    f'{CALL_OPEN}{{"arguments": {{}}}}{CALL_CLOSE}',  # no name
])
def test_a_broken_block_is_still_a_call_and_one_the_episode_refuses(text):
    _, calls = split_tool_calls(text)
    assert len(calls) == 1 and calls[0]["function"]["name"] == ""
    assert call_actions(calls, max_actions=5, max_chars=4096) is None


def test_a_broken_block_beside_a_good_one_makes_two_calls():
    _, calls = split_tool_calls(hermes({"name": "act", "arguments": {"actions": ["Up"]}}) + f"{CALL_OPEN}x{CALL_CLOSE}")
    assert len(calls) == 2 and call_actions(calls, max_actions=5, max_chars=4096) is None


def test_text_without_blocks_makes_no_call():
    assert split_tool_calls("  <answer>Up</answer> ") == ("<answer>Up</answer>", None)


pieces = st.sampled_from([CALL_OPEN, CALL_CLOSE, "{", "}", '"name"', ":", '"act"', '"arguments"', "[", "]", " ", "\x00",
                          "\ud800", "é", '{"name": "act", "arguments": {"actions": ["Up"]}}'])


@settings(max_examples=300, deadline=None)
@given(st.lists(pieces | st.text(max_size=8), max_size=30).map("".join))
def test_hostile_text_never_raises_and_every_opened_block_is_one_call(text):
    outside, calls = split_tool_calls(text)
    opened = 0
    position = text.find(CALL_OPEN)
    while position >= 0:
        opened += 1
        closing = text.find(CALL_CLOSE, position + len(CALL_OPEN))
        position = -1 if closing < 0 else text.find(CALL_OPEN, closing + len(CALL_CLOSE))
    assert len(calls or []) == opened
    assert CALL_OPEN not in outside
    for made in calls or []:
        assert isinstance(made["function"]["arguments"], str)
        json.dumps(made, ensure_ascii=True)  # recordable


def test_deeply_nested_blocks_are_read_without_raising():
    _, calls = split_tool_calls(CALL_OPEN + "[" * 100_000 + CALL_CLOSE)
    assert calls[0]["function"]["name"] == ""


def test_template_messages_give_templates_object_arguments_and_leave_the_transcript_alone():
    messages = [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "act", "arguments": '{"actions": ["Up"]}'}},
        {"id": "call_2", "type": "function", "function": {"name": "act", "arguments": "not json"}},
    ]}]
    rendered = template_messages(messages)
    assert rendered[0]["tool_calls"][0]["function"]["arguments"] == {"actions": ["Up"]}
    assert rendered[0]["tool_calls"][1]["function"]["arguments"] == "not json"
    assert messages[0]["tool_calls"][0]["function"]["arguments"] == '{"actions": ["Up"]}'


def test_renders_tools_reads_the_template():
    assert renders_tools("{% if tools %}{{ tools | tojson }}{% endif %}")
    assert renders_tools({"default": "x", "tool_use": "{{ tools }}"})
    assert not renders_tools("{% for message in messages %}{{ message.content }}{% endfor %}")
    assert not renders_tools(None)


# -- the openai agent against a fake server --------------------------------------------------------


class FakeServer:
    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.lock = threading.Lock()
        self.answer: Callable[[dict], dict] = lambda body: {"role": "assistant", "content": "hi"}


@pytest.fixture
def server() -> Iterator[tuple[FakeServer, str]]:
    state = FakeServer()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with state.lock:
                state.bodies.append(body)
            message = state.answer(body)
            reason = "tool_calls" if message.get("tool_calls") else "stop"
            payload = json.dumps({"choices": [{"index": 0, "message": message, "finish_reason": reason}],
                                  "usage": {"prompt_tokens": 900, "completion_tokens": 40}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    with serving(Handler) as url:
        yield state, url


def first_enum_call(body: dict) -> dict:
    """A model that always takes the schema's first action, as one call with null content."""
    if "tools" not in body:
        return {"role": "assistant", "content": "<answer>Up</answer>"}
    first = body["tools"][0]["function"]["parameters"]["properties"]["actions"]["items"]["enum"][0]
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_x", "type": "function", "function": {"name": "act", "arguments": json.dumps({"actions": [first]})}}
    ]}


def _request(tools=TOOLS) -> AgentRequest:
    return AgentRequest(messages=[{"role": "user", "content": "go"}], episode_key="k/test/0/0", turn=1, tools=tools)


def test_the_openai_agent_sends_the_tools_and_reads_the_calls(server):
    from ragen_bench.agents.openai_compat import make_openai_agent

    state, url = server
    state.answer = first_enum_call
    agent = make_openai_agent("m", base_url=url, max_retries=0)
    try:
        (reply,) = agent.act([_request()])
        (text_reply,) = agent.act([_request(tools=None)])
    finally:
        agent.close()
    assert state.bodies[0]["tools"] == TOOLS and state.bodies[0]["tool_choice"] == "required"
    assert "tools" not in state.bodies[1] and "tool_choice" not in state.bodies[1]
    assert reply.tool_calls[0]["function"] == {"name": "act", "arguments": '{"actions": ["Up"]}'}
    assert (reply.text, reply.null_content, reply.finish_reason) == ("", False, "tool_calls")
    assert (text_reply.text, text_reply.tool_calls) == ("<answer>Up</answer>", None)


def test_tool_choice_is_a_setting_and_a_bad_one_is_refused(server):
    from ragen_bench.agents import make_agent

    state, url = server
    state.answer = first_enum_call
    agent = make_agent("openai", model="m", base_url=url, tool_choice="auto")
    try:
        agent.act([_request()])
    finally:
        agent.close()
    assert state.bodies[0]["tool_choice"] == "auto"
    with pytest.raises(AgentError, match="tool_choice must be one of required, auto, got 'always'"):
        make_agent("openai", model="m", base_url=url, tool_choice="always")


def test_calls_that_are_no_list_are_a_server_fault(server):
    from ragen_bench.agents.openai_compat import CompletionError, make_openai_agent

    state, url = server
    state.answer = lambda body: {"role": "assistant", "content": None, "tool_calls": "act(Up)"}
    agent = make_openai_agent("m", base_url=url, max_retries=0)
    try:
        with pytest.raises(CompletionError, match="tool_calls is not a list of objects"):
            agent.act([_request()])
    finally:
        agent.close()


def test_an_eval_by_the_openai_agent_in_tools_mode_verifies(server, tmp_path: Path):
    from ragen_bench.eval import rundir
    from ragen_bench.eval.compose import compose_config
    from ragen_bench.eval.run import run_eval
    from ragen_bench.leaderboard.errors import LeaderboardError
    from ragen_bench.leaderboard.schema import FORMAT
    from ragen_bench.leaderboard.verify import verify

    state, url = server
    state.answer = first_enum_call
    folder = tmp_path / "fake-tools"
    run_eval(compose_config("eval", [
        f"env={SOKOBAN}", "agent=openai", "agent.model=fake", f"agent.base_url={url}", "limit=2",
        "chat.action_format=tools", f"out={folder}", "progress=false",
    ]))
    (folder / rundir.LOCK).unlink()
    (folder / "submission.json").write_text(json.dumps({
        "format": FORMAT, "name": "fake-tools", "model": "fake", "recipe": "none", "date": "2026-12-03",
        "contact": "tests", "trained_on_train_panels": False,
    }))
    # 40 completion tokens for an empty text: plausible only because the calls count as what they wrote.
    run = verify(folder)
    assert len(run.rows) == 2 and run.turns == sum(row["num_turns"] for row in run.rows) >= 2
    # Replies that answered by a call are no null-content replies, though their content was null.
    assert run.summary["groups"][0]["null_content_replies"] == 0
    # The conversation the server saw: each turn's call answered by a tool message.
    last = state.bodies[-1]["messages"]
    assert [m["role"] for m in last[2:6]] == ["assistant", "tool", "assistant", "tool"]
    assert last[2]["tool_calls"][0]["id"] == last[3]["tool_call_id"] == "call_1"
    lines = (folder / "episodes.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    assert record["turns"][0]["tool_calls"][0]["id"] == "call_x" and record["turns"][0]["valid"]
    # Still bounded: far more tokens than the text and the calls could hold is refused.
    record["turns"][0]["completion_tokens"] = 5000
    (folder / "episodes.jsonl").write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    with pytest.raises(LeaderboardError, match=r"turn 1, field completion_tokens: implausible"):
        verify(folder)


# -- the hf agent with the tiny local model ---------------------------------------------------------

# ChatML that shows the tools and each earlier call, as tool-calling templates (Qwen2.5's) do.
TOOLS_CHATML = (
    "{% if tools %}<|im_start|>system\nTools: {{ tools | tojson }}<|im_end|>\n{% endif %}"
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "{% for call in message.get('tool_calls', []) %}<tool_call>"
    "{{ {'name': call['function']['name'], 'arguments': call['function']['arguments']} | tojson }}</tool_call>"
    "{% endfor %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def tiny_tools():
    """An hf agent on the tiny random model, its tokenizer given a template that renders tools."""
    pytest.importorskip("transformers")
    from ragen_bench.agents.hf import HFAgent
    from ragen_bench.agents.local_models import load_model
    from ragen_bench.agents.sampling import SamplingSettings, resolve_model_path

    model, tokenizer = load_model(resolve_model_path("tiny"))
    tokenizer.chat_template = TOOLS_CHATML
    return HFAgent(model, tokenizer, sampling=SamplingSettings(max_new_tokens=16), generate_batch=4)


def test_the_hf_prompt_shows_the_tools_and_earlier_calls_as_objects(tiny_tools):
    messages = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "act", "arguments": '{"actions": ["Up"]}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Reward: 0.0"}]
    prompt = tiny_tools.render(messages, TOOLS)
    assert '"enum": ["Up", "Down", "Left", "Right"]' in prompt
    assert '<tool_call>{"name": "act", "arguments": {"actions": ["Up"]}}</tool_call>' in prompt
    assert "Tools:" not in tiny_tools.render(messages[:1])


def test_the_hf_agent_plays_tools_mode_end_to_end_and_its_records_replay(tiny_tools):
    import gymnasium

    from ragen_bench.chat import ChatConfig, ChatEpisode, run_lockstep
    from ragen_bench.eval.replay import replay_episode

    config = ChatConfig(action_format="tools", max_turns=2)
    episodes = [ChatEpisode(gymnasium.make(SOKOBAN), config, env_id=SOKOBAN, seed=seed, split="test")
                for seed in (1, 2)]
    records = run_lockstep(episodes, tiny_tools)
    for record in records:
        assert record.num_turns == 2 and all(turn.completion_tokens for turn in record.turns)
        # A random model writes no readable call: malformed turns, penalised, never an exception.
        assert all(turn.format_penalty == -0.1 for turn in record.turns)
        data = json.loads(json.dumps(record.to_dict()))
        replay_episode(data, gymnasium.make(SOKOBAN), config, where={"line": 1})


def test_a_template_that_does_not_render_tools_is_refused(tiny_tools, monkeypatch):
    monkeypatch.setattr(tiny_tools.tokenizer, "chat_template", "{% for m in messages %}{{ m['content'] }}{% endfor %}")
    with pytest.raises(AgentError, match="chat template does not render tools"):
        tiny_tools.act([_request()])


def test_the_vllm_agent_sends_each_schema_once_per_batch_and_reads_the_calls(tiny_tools, monkeypatch):
    import sys
    import types

    from ragen_bench.agents.vllm_offline import VLLMOfflineAgent
    from ragen_bench.agents.sampling import SamplingSettings

    tokenizer = tiny_tools.tokenizer
    answer = tokenizer(hermes({"name": "act", "arguments": {"actions": ["Down"]}}), add_special_tokens=False)["input_ids"]

    class FakeLLM:
        def __init__(self):
            self.calls = []

        def get_tokenizer(self):
            return tokenizer

        def chat(self, conversations, sampling_params, use_tqdm, lora_request, **options):
            self.calls.append((len(conversations), options.get("tools")))
            completion = types.SimpleNamespace(token_ids=answer, finish_reason="stop")
            return [types.SimpleNamespace(prompt_token_ids=[1, 2], outputs=[completion]) for _ in conversations]

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(SamplingParams=lambda **params: params))
    llm = FakeLLM()
    agent = VLLMOfflineAgent(llm, SamplingSettings(max_new_tokens=64, sampling_seed=0), stop_strings=[])
    other = act_tool(("Left", "Right"), 1)
    replies = agent.act([_request(), _request(tools=other), _request(), _request(tools=None)])
    assert llm.calls == [(2, TOOLS), (1, other), (1, None)]
    assert [call_actions(r.tool_calls, max_actions=5, max_chars=4096) for r in replies[:3]] == [("Down",)] * 3
    assert replies[3].tool_calls is None and CALL_OPEN in replies[3].text
