"""``chat.action_format=tools``: the act schema, tool-call replies judged by the episode, records that replay.

Text mode must stay exactly what it was (hashes, identities, prompts); tools mode must run whole with the
scripted agents, refuse what it cannot do (games, training, agents that write text only) and replay.
"""

from __future__ import annotations

import dataclasses
import json

import gymnasium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragen_bench  # noqa: F401  (registers the envs)
from ragen_bench.agents.scripted import OptimalAgent, RandomAgent, play_optimal
from ragen_bench.chat import AgentError, AgentReply, ChatConfig, ChatEpisode, Trajectory, run_lockstep
from ragen_bench.chat.config import check_chat, recorded_chat
from ragen_bench.chat.game import GameChatConfig
from ragen_bench.chat.tools import TOOL_NAME, act_tool
from ragen_bench.eval.compose import compose_config
from ragen_bench.eval.config import ConfigError, load
from ragen_bench.eval.replay import ReplayMismatch, replay_episode

SOKOBAN = "RAGEN/Sokoban-6x6-v0"
TOOLS = ChatConfig(action_format="tools")


def call(arguments, name=TOOL_NAME):
    return {"id": "c", "type": "function", "function": {"name": name, "arguments": arguments}}


def acts(*actions):
    return [call(json.dumps({"actions": list(actions)}))]


def episode(config=TOOLS, env_id=SOKOBAN, seed=3):
    played = ChatEpisode(gymnasium.make(env_id), config, env_id=env_id, seed=seed, split="test")
    played.reset()
    return played


# -- text mode is unchanged -----------------------------------------------------------------------


def test_text_mode_keeps_its_hash_and_records_no_action_format():
    text = ChatConfig()
    assert text.to_dict()["action_format"] == "text"
    assert "action_format" not in recorded_chat(text.to_dict())
    # The same settings spelt without the field (as every run before it) hash alike; tools does not.
    assert text.template_hash() == ChatConfig(**recorded_chat(text.to_dict())).template_hash()
    assert TOOLS.template_hash() != text.template_hash()


def test_text_mode_prompt_and_request_say_nothing_of_tools():
    played = episode(ChatConfig())
    request = played.request()
    assert request.tools is None
    assert "act tool" not in request.messages[1]["content"] and "<answer>" in request.messages[1]["content"]


def test_eval_identity_holds_action_format_only_in_tools_mode():
    text = load(compose_config("eval", [f"env={SOKOBAN}", "limit=1"]))
    tools = load(compose_config("eval", [f"env={SOKOBAN}", "limit=1", "chat.action_format=tools"]))
    assert "action_format" not in text.identity["chat"]
    assert tools.identity["chat"]["action_format"] == "tools"
    assert tools.template_hash != text.template_hash


def test_an_unknown_action_format_is_refused_naming_the_key():
    with pytest.raises(ValueError, match=r"chat\.action_format must be one of text, tools, got 'json'"):
        check_chat({"action_format": "json"})


# -- the request ---------------------------------------------------------------------------------


def test_a_tools_request_offers_the_act_function_with_the_envs_names():
    request = episode(dataclasses.replace(TOOLS, max_actions_per_turn=3)).request()
    (tool,) = request.tools
    assert tool["function"]["name"] == "act"
    actions = tool["function"]["parameters"]["properties"]["actions"]
    assert actions["items"] == {"type": "string", "enum": ["Up", "Down", "Left", "Right"]}
    assert actions["maxItems"] == 3
    intro = request.messages[1]["content"]
    assert "calling the act tool" in intro and "up to 3 actions" in intro
    assert "then one call of the act tool" in request.messages[-1]["content"]


def test_a_free_text_env_takes_one_free_text_action():
    (tool,) = act_tool(None, 5)
    actions = tool["function"]["parameters"]["properties"]["actions"]
    assert actions["items"] == {"type": "string"} and actions["maxItems"] == 1


# -- replies -------------------------------------------------------------------------------------


def test_a_well_formed_call_plays_its_actions_and_is_answered_by_a_tool_message():
    played = episode()
    played.step(AgentReply("", null_content=True, tool_calls=acts(" up ", "LEFT")))
    turn = played.trajectory().turns[0]
    assert (turn.valid, turn.parsed_actions, turn.action_ids, turn.format_penalty) == (True, ["up", "LEFT"], [0, 2], 0.0)
    assert turn.tool_calls == acts(" up ", "LEFT")
    assistant, answer = played.messages[2:4]
    assert assistant["tool_calls"][0]["id"] == "call_1"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"actions": ["up", "LEFT"]}
    assert answer["role"] == "tool" and answer["tool_call_id"] == "call_1"
    assert answer["content"].startswith("Reward: ") and "Turn 2:" in answer["content"]


@pytest.mark.parametrize("calls", [
    None,
    [],
    acts("Up") + acts("Down"),                         # two calls
    [call(json.dumps({"actions": ["Up"]}), name="move")],  # another function
    [call("{actions: [Up]}")],                         # no JSON
    [call(json.dumps({"actions": ["Up"], "why": "x"}))],  # a key the schema lacks
    [call(json.dumps({"actions": "Up"}))],             # not a list
    [call(json.dumps({"actions": ["Up", 3]}))],         # not a string
    acts("Up", "Up", "Up", "Up", "Up", "Up"),          # more than maxItems
    [call({"actions": ["Up"]})],                        # arguments not a JSON text
    [call("[" * 3000 + "]" * 3000)],                    # nested past the limit of the text
    [{"id": "c", "type": "function"}],                  # no function
    [{"function": "act"}],                              # function not an object
])
def test_a_malformed_call_is_a_malformed_turn(calls):
    played = episode()
    played.step(AgentReply("<answer>Up</answer>", tool_calls=calls))
    turn = played.trajectory().turns[0]
    assert (turn.valid, turn.action_ids, turn.parsed_actions, turn.format_penalty) == (False, [], [], -0.1)
    assert "tool_calls" not in played.messages[2] and played.messages[3]["role"] == "user"


def test_an_invalid_name_in_a_call_is_penalised_and_the_valid_ones_still_play():
    played = episode()
    played.step(AgentReply("", tool_calls=acts("Up", "Jump")))
    turn = played.trajectory().turns[0]
    assert (turn.valid, turn.action_ids, turn.format_penalty) == (False, [0], -0.1)


def test_calls_that_are_no_json_data_break_the_protocol():
    with pytest.raises(AgentError, match="tool_calls must be"):
        episode().step(AgentReply("", tool_calls=[{"function": ("act",)}]))
    with pytest.raises(AgentError, match="tool_calls must be"):
        episode().step(AgentReply("", tool_calls="act"))


json_leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=12)
json_data = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3)
                         | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=12)
call_shaped = st.builds(
    lambda name, arguments, extra: [{"function": {"name": name, "arguments": arguments}, **extra}],
    st.sampled_from([TOOL_NAME, "ACT", "", "x"]),
    st.one_of(json_data.map(json.dumps), st.text(max_size=40), json_data),
    st.dictionaries(st.text(max_size=4), json_data, max_size=2),
)


@settings(max_examples=150, deadline=None)
@given(calls=st.none() | st.lists(st.dictionaries(st.text(max_size=8), json_data, max_size=3), max_size=3) | call_shaped,
       text=st.text(max_size=40))
def test_hostile_calls_never_raise_and_their_record_round_trips(calls, text):
    played = episode()
    played.step(AgentReply(text, tool_calls=calls))
    record = played.trajectory()
    assert record.turns[0].format_penalty in (0.0, -0.1)
    data = json.loads(json.dumps(record.to_dict(), ensure_ascii=True))
    assert Trajectory.from_dict(data).to_dict() == record.to_dict()


def test_a_history_window_keeps_each_call_with_its_answer():
    played = episode(dataclasses.replace(TOOLS, history_window=2, max_actions_per_turn=1, max_turns=5))
    for action in ("Up", "Down", "Up"):
        played.step(AgentReply("", tool_calls=acts(action)))
    messages = played.messages
    for index, message in enumerate(messages):
        if message["role"] == "tool":
            assert messages[index - 1]["tool_calls"][0]["id"] == message["tool_call_id"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]


# -- the scripted agents play tools mode whole ---------------------------------------------------


@pytest.mark.parametrize("env_id", [SOKOBAN, "RAGEN/FrozenLake-4x4-v0", "RAGEN/Countdown-v0"])
def test_the_optimal_agent_scores_the_same_by_tool_calls(env_id):
    text = play_optimal(env_id, ChatConfig(), range(4))
    tools = play_optimal(env_id, TOOLS, range(4))
    assert [t.success for t in tools] == [t.success for t in text]
    assert [t.num_actions for t in tools] == [t.num_actions for t in text]
    assert all(turn.valid and turn.tool_calls for t in tools for turn in t.turns)


def test_the_random_agent_answers_by_valid_calls():
    episodes = [episode(seed=seed) for seed in range(3)]
    records = run_lockstep(episodes, RandomAgent(sampling_seed=1))
    assert all(turn.valid and len(turn.tool_calls) == 1 for record in records for turn in record.turns)


class TextOnly:
    name = "text-only"

    def act(self, requests):
        return [AgentReply("<answer>Up</answer>") for _ in requests]

    def close(self):
        pass


def text_only(**settings):
    return TextOnly()


def test_an_eval_by_an_agent_that_writes_text_only_is_refused_before_its_folder_is_written(tmp_path):
    from ragen_bench.eval.run import run_eval

    out = tmp_path / "run"
    with pytest.raises(AgentError, match="'text-only' does not act by tool calls"):
        run_eval(compose_config("eval", [f"env={SOKOBAN}", "limit=1", "chat.action_format=tools",
                                         "agent.name=tests.test_chat_tools:text_only", f"out={out}"]))
    assert not (out / "manifest.json").exists()


def test_an_agent_that_writes_text_only_is_refused_before_anything_is_played():
    played = ChatEpisode(gymnasium.make(SOKOBAN), TOOLS, env_id=SOKOBAN, seed=1, split="test")
    with pytest.raises(AgentError, match="'text-only' does not act by tool calls"):
        run_lockstep([played], TextOnly())
    assert not played.started


# -- refused where it cannot work -----------------------------------------------------------------


def test_games_refuse_tools_mode():
    with pytest.raises(ValueError, match="games take text actions only"):
        GameChatConfig(chat=TOOLS)


def test_an_eval_of_a_game_refuses_tools_mode_naming_the_key():
    pytest.importorskip("pettingzoo")
    with pytest.raises(ConfigError, match=r"^chat\.action_format=tools: multi-agent games"):
        load(compose_config("eval", ["env=RAGEN/TicTacToe-v0", "agent=random", "chat.action_format=tools"]))


def test_training_refuses_tools_mode():
    from ragen_bench.train import config as train_config

    with pytest.raises(train_config.TrainConfigError, match=r"chat\.action_format: must be text for training"):
        train_config.from_preset("starpo", ["model=tiny", "chat.action_format=tools"])


# -- replay --------------------------------------------------------------------------------------


def _record(seed=5):
    played = episode(seed=seed)
    return run_lockstep([played], OptimalAgent(max_actions_per_turn=TOOLS.max_actions_per_turn))[0].to_dict()


def _replay(record):
    return replay_episode(json.loads(json.dumps(record)), gymnasium.make(SOKOBAN), TOOLS, where={"line": 1})


def test_a_tools_record_replays():
    record = _record()
    assert record["turns"][0]["tool_calls"]
    assert _replay(record) == [None] * len(record["turns"])


def test_an_edited_call_is_refused_at_its_turn():
    record = _record()
    record["turns"][0]["tool_calls"][0]["function"]["arguments"] = json.dumps({"actions": ["Down"]})
    with pytest.raises(ReplayMismatch, match=r"turn 1, field parsed_actions.*recorded tool_calls"):
        _replay(record)


def test_a_record_whose_calls_are_no_list_is_refused_naming_the_field():
    record = _record()
    record["turns"][0]["tool_calls"] = "act(Up)"
    with pytest.raises(ReplayMismatch, match=r"turn 1, field tool_calls: must be None or a list of objects"):
        _replay(record)


def test_a_record_that_drops_its_calls_is_refused():
    record = _record()
    del record["turns"][0]["tool_calls"]
    with pytest.raises(ReplayMismatch, match=r"turn 1, field"):
        _replay(record)


# -- docs/eval.md's example is what the command does ------------------------------------------------


def test_the_docs_example_prints_and_records_what_the_docs_show(tmp_path, capsys):
    import re
    import shlex

    from ragen_bench.cli import main

    from .conftest import REPO_ROOT

    section = (REPO_ROOT / "docs" / "eval.md").read_text().split("## Actions as tools", 1)[1].split("\n## ", 1)[0]
    command, table, record = re.findall(r"```\w*\n(.*?)```", section, re.S)[:3]
    argv = shlex.split(command.strip())
    assert argv[:2] == ["ragen-bench", "eval"] and argv[-1] == "out=runs/tools"
    assert main([*argv[1:-1], f"out={tmp_path / 'tools'}", "progress=false"]) == 0
    printed = capsys.readouterr().out
    for line in table.strip().splitlines():
        assert line in printed
    first = json.loads((tmp_path / "tools" / "episodes.jsonl").read_text().splitlines()[0])
    assert first["seed"] == 123
    shown = json.loads("{" + record.strip() + "}")
    assert {key: first["turns"][0][key] for key in shown} == shown
