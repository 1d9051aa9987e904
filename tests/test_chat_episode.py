"""The chat turn loop: action semantics, budgets, prompts, records and lock-step batching.

Exact prompt texts are pinned by snapshot files in ``tests/snapshots/``; regenerate them
after an intended template change with ``RAGEN_BENCH_UPDATE_SNAPSHOTS=1``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench.chat import (
    AgentError,
    AgentReply,
    AgentRequest,
    ChatConfig,
    ChatEpisode,
    Trajectory,
    format_reward,
    run_lockstep,
)
from ragen_bench.chat.trajectory import pack_text, unpack_text
from ragen_bench.envs.base import AnyText, TextEnv

SNAPSHOTS = Path(__file__).parent / "snapshots"
SOKOBAN = "RAGEN/Sokoban-6x6-v0"


class Corridor(TextEnv):
    """A 1-D corridor test double: start at 0, the goal at ``length``; +1 on arrival."""

    action_names = ("Left", "Right")
    symbol_meanings = {"P": "player", "G": "goal", "_": "floor"}
    instruction = "Walk to the goal."

    def __init__(self, length: int = 4, max_steps: int = 100) -> None:
        super().__init__()
        self.length, self.max_steps = length, max_steps
        self._set_action_space(spaces.Discrete(2))
        self.observation_space = spaces.Text(max_length=64)

    def _reset_level(self, seed):
        self.position, self.steps = 0, 0
        return self.render_text(), {"success": False, "optimal_length": self.length}

    def _step_action(self, action):
        before = self.position
        self.position = max(0, self.position + (1 if action == 1 else -1))
        self.steps += 1
        arrived = self.position == self.length
        info = {"success": arrived, "action_is_effective": self.position != before, "extra": [1, 2], "cell": np.int64(self.position)}
        return self.render_text(), 1.0 if arrived else 0.0, arrived, self.steps >= self.max_steps, info

    def optimal_action(self, steps_left=None):
        return 1 if self.position < self.length else None

    def render_text(self) -> str:
        return "".join("P" if i == self.position else ("G" if i == self.length else "_") for i in range(self.length + 1))


class Password(TextEnv):
    """A free-text test double: answer the password to win; any str up to ``max_chars`` is an action."""

    action_names = None
    instruction = "Say the password."

    def __init__(self, password: str = "fish", max_chars: int = 8) -> None:
        super().__init__()
        self.password = password
        self._set_action_space(AnyText(max_length=max_chars, charset="abcdefghijklmnopqrstuvwxyz"))
        self.observation_space = spaces.Text(max_length=64)

    def _reset_level(self, seed):
        self._text = "The password is swordfish-ish: 'fish'."
        return self._text, {"success": False}

    def _step_action(self, action):
        won = action == self.password
        self._text = "Done." if won else "Wrong."
        return self._text, float(won), won, False, {"success": won, "action_is_effective": True, "said": action}

    def render_text(self) -> str:
        return self._text


def _episode(env=None, config=None, **kwargs) -> ChatEpisode:
    episode = ChatEpisode(env or Corridor(), config or ChatConfig(), env_id="test/Corridor", seed=7, **kwargs)
    episode.reset()
    return episode


def _say(episode: ChatEpisode, answer: str) -> None:
    episode.step(AgentReply(f"<think>ok</think><answer>{answer}</answer>"))


def test_valid_actions_around_an_invalid_one_all_run_and_the_turn_is_penalised_once():
    episode = _episode()
    _say(episode, "right || jump || RIGHT || fly")
    turn = episode.trajectory().turns[0]
    assert turn.action_ids == [1, 1]  # both valid names ran, before and after the bad ones
    assert turn.parsed_actions == ["right", "jump", "RIGHT", "fly"]
    assert not turn.valid
    assert turn.format_penalty == pytest.approx(-0.1)
    assert "State:\n__P_G\n" in episode.messages[-1]["content"]


def test_a_clean_turn_has_no_penalty_and_counts_effective_actions():
    episode = _episode()
    _say(episode, "Left || Right")
    trajectory = episode.trajectory()
    assert trajectory.turns[0].valid and trajectory.turns[0].format_penalty == 0.0
    assert trajectory.num_effective_actions == 1  # Left at the wall changes nothing
    assert trajectory.num_actions == trajectory.num_valid_actions == 2


@pytest.mark.parametrize("text", ["", "Right", "<answer>Right</answer>", "<think></think><answer></answer>", "\x00" * 10_000])
def test_malformed_or_empty_replies_cost_the_penalty_and_move_nothing(text):
    episode = _episode()
    episode.step(AgentReply(text))
    trajectory = episode.trajectory()
    assert trajectory.turns[0].action_ids == []
    assert trajectory.total_reward == pytest.approx(-0.1)
    assert len(trajectory.turns[0].raw_response) <= ChatConfig().max_response_chars
    assert trajectory.turns[0].response_chars == len(text)


replies = st.one_of(
    st.text(max_size=300),
    st.lists(st.sampled_from(["<think>", "</think>", "<answer>", "</answer>", "Left", "right", "||", " ", "x"]), max_size=30).map("".join),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(replies, min_size=1, max_size=6), st.booleans())
def test_any_reply_sequence_is_played_without_error_and_accounted_exactly(texts, think):
    episode = _episode(Corridor(length=3), ChatConfig(think=think, max_actions_per_episode=6))
    for text in texts:
        if episode.done:
            break
        episode.step(AgentReply(text))
    trajectory = episode.trajectory()
    penalties = sum(turn.format_penalty for turn in trajectory.turns)
    assert trajectory.total_reward == pytest.approx(sum(sum(t.env_rewards) for t in trajectory.turns) + penalties)
    for turn in trajectory.turns:
        assert turn.format_penalty == (0.0 if turn.valid else -0.1)
        assert len(turn.action_ids) == len(turn.env_rewards) <= ChatConfig().max_actions_per_turn
    assert trajectory.num_actions <= 6 and trajectory.num_turns <= 5
    assert episode.done == (trajectory.success or trajectory.num_actions == 6 or trajectory.num_turns == 5)


def test_execution_stops_when_the_env_ends_mid_turn():
    episode = _episode(Corridor(length=2))
    _say(episode, "Right || Right || Right || Left")
    trajectory = episode.trajectory()
    assert trajectory.turns[0].action_ids == [1, 1]
    assert episode.done and trajectory.success and trajectory.terminated and not trajectory.truncated
    assert trajectory.total_reward == pytest.approx(1.0)


def test_the_episode_action_budget_cuts_execution_and_ends_the_episode():
    episode = _episode(Corridor(length=50), ChatConfig(max_actions_per_episode=3))
    _say(episode, "Right || Right")
    assert "Actions left: 1." in episode.messages[-1]["content"]
    _say(episode, "Right || Right || Right")
    trajectory = episode.trajectory()
    assert trajectory.turns[1].action_ids == [1]
    assert trajectory.turns[1].valid and trajectory.turns[1].format_penalty == 0.0  # cut, not penalised
    assert trajectory.num_valid_actions == 5 and trajectory.num_actions == 3
    assert episode.done and trajectory.truncated and not trajectory.success


def test_max_turns_ends_the_episode():
    episode = _episode(Corridor(length=50), ChatConfig(max_turns=2))
    _say(episode, "Left")
    assert not episode.done
    _say(episode, "Left")
    assert episode.done and episode.trajectory().num_turns == 2
    with pytest.raises(RuntimeError):
        episode.request()


def test_env_time_limit_counts_as_truncation():
    episode = _episode(Corridor(length=50, max_steps=2))
    _say(episode, "Left || Left || Left")
    trajectory = episode.trajectory()
    assert trajectory.turns[0].action_ids == [0, 0] and trajectory.truncated and not trajectory.terminated


def test_per_turn_reward_message_and_info_lite():
    episode = _episode(Corridor(length=1))
    _say(episode, "Right")
    trajectory = episode.trajectory()
    assert trajectory.messages[-1]["content"].startswith("Reward: 1.0\n")
    info = trajectory.turns[0].info
    assert info == {"success": True, "action_is_effective": True, "cell": 1}  # lists dropped
    assert type(info["cell"]) is int  # numpy scalars become JSON-safe Python ones
    assert trajectory.optimal_length == 1


def test_free_text_env_takes_the_whole_answer_as_one_action():
    episode = _episode(Password(), ChatConfig(think=False))
    episode.step(AgentReply("<answer>Fish || xxxxx</answer>"))  # longer than the space allows: invalid
    first = episode.trajectory().turns[0]
    assert first.parsed_actions == ["Fish || xxxxx"] and first.action_ids == [] and first.format_penalty == pytest.approx(-0.1)
    episode.step(AgentReply("<answer> fish </answer>"))
    trajectory = episode.trajectory()
    assert trajectory.turns[1].action_ids == ["fish"] and trajectory.success
    assert "free text" in trajectory.messages[1]["content"]


@pytest.mark.parametrize("seed", range(6))
def test_action_names_are_read_after_reset_for_envs_that_reorder_them(seed):
    # Bandit orders its two arm names by seed; one reused env serves every episode.
    env = gymnasium.make("RAGEN/Bandit-v0")
    for earlier in range(3):  # leave the env's names from other seeds behind
        env.reset(seed=earlier)
    episode = ChatEpisode(env, ChatConfig(), env_id="RAGEN/Bandit-v0", seed=seed)
    episode.reset()
    names = env.unwrapped.action_names
    assert f"Actions you can take: {names[0]}, {names[1]}." in episode.messages[1]["content"]
    _say(episode, env.unwrapped.high_risk_name.upper())
    turn = episode.trajectory().turns[0]
    assert names[turn.action_ids[0]] == env.unwrapped.high_risk_name


def test_history_window_keeps_the_intro_and_the_last_k_turns():
    config = ChatConfig(history_window=2, max_actions_per_episode=50, max_turns=10)
    episode = _episode(Corridor(length=50), config)
    for _ in range(4):
        _say(episode, "Right")
    prompt = episode.messages
    assert [m["role"] for m in prompt] == ["system", "user", "assistant", "user"]
    assert prompt[1]["content"].startswith("Walk to the goal.")
    assert "\nTurn 4:" in prompt[1]["content"] and "Turn 3" not in prompt[1]["content"]
    assert "\nTurn 5:" in prompt[3]["content"]
    assert len(episode.trajectory().messages) == 2 + 2 * 4  # the record keeps everything


def test_messages_alternate_roles_for_every_chat_template():
    episode = _episode(Corridor(length=50), ChatConfig(max_turns=3))
    for answer in ("Right", "nonsense", "Left"):
        _say(episode, answer)
    roles = [m["role"] for m in episode.trajectory().messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant", "user"]


def test_template_hash_changes_with_any_setting_and_is_recorded():
    base = ChatConfig()
    assert base.template_hash() == ChatConfig().template_hash()
    variants = [ChatConfig(think=False), ChatConfig(format_penalty=-0.2), ChatConfig(history_window=3), ChatConfig(max_turns=6)]
    assert len({base.template_hash(), *(v.template_hash() for v in variants)}) == 1 + len(variants)
    assert _episode().trajectory().template_hash == base.template_hash()


def test_invalid_configs_are_rejected():
    for bad in (dict(max_turns=0), dict(history_window=0), dict(template="nope"), dict(action_separator=" ")):
        with pytest.raises(ValueError):
            ChatConfig(**bad)


def test_trajectory_round_trips_through_json_exactly():
    episode = _episode(Password())
    episode.step(AgentReply("<think>hm</think><answer>fish</answer>", prompt_tokens=12, completion_tokens=5))
    trajectory = episode.trajectory()
    again = Trajectory.from_dict(json.loads(json.dumps(trajectory.to_dict())))
    assert again == trajectory
    assert again.turns[0].completion_tokens == 5


def test_format_reward_hides_float_noise():
    assert format_reward(-0.1 * 3) == "-0.3"
    assert format_reward(10.9) == "10.9"
    assert format_reward(0) == "0.0"
    assert format_reward(1e6) == "1000000.0"  # never scientific notation at reward scales


class _Scripted:
    """Replies from a fixed list per episode key; records each batch size."""

    name = "scripted-test"

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.batch_sizes: list[int] = []

    def act(self, requests: list[AgentRequest]) -> list[AgentReply]:
        self.batch_sizes.append(len(requests))
        return [AgentReply(f"<think>.</think><answer>{self.answers[r.episode_key][r.turn - 1]}</answer>") for r in requests]

    def close(self) -> None:
        pass


def test_run_lockstep_batches_turns_and_hands_over_finished_episodes_at_once():
    episodes = [ChatEpisode(Corridor(length=n), ChatConfig(), env_id="test/Corridor", seed=n) for n in (1, 3, 2)]
    agent = _Scripted({e.key: ["Right"] * 5 for e in episodes})
    finished: list[tuple[int, int]] = []
    ticks: list[int] = []
    results = run_lockstep(
        episodes,
        agent,
        on_finished=lambda t: finished.append((t.seed, len(agent.batch_sizes))),
        progress=lambda t: ticks.append(t.seed),
    )
    assert [t.seed for t in results] == [1, 3, 2]  # input order
    assert finished == [(1, 1), (2, 2), (3, 3)]  # each handed over on the turn it ended
    assert ticks == [1, 2, 3]
    assert agent.batch_sizes == [3, 2, 1]
    assert all(t.success for t in results)


def test_run_lockstep_rejects_an_agent_that_drops_replies():
    class Silent(_Scripted):
        def act(self, requests):
            return []

    with pytest.raises(AgentError, match="'scripted-test'.*0 replies for 1 requests"):
        run_lockstep([ChatEpisode(Corridor(), ChatConfig(), env_id="c", seed=0)], Silent({}))


# -- exact prompt snapshots (Sokoban 6x6, test seed 123) ---------------------------------

SNAPSHOT_CASES = {
    "sokoban6x6_seed123_think": ChatConfig(),
    "sokoban6x6_seed123_nothink": ChatConfig(think=False),
    "sokoban6x6_seed123_window1": ChatConfig(history_window=1),
}
# A fixed reply script: a clean move, a partly invalid turn, a malformed reply.
SNAPSHOT_REPLIES = ("<answer>Left || Up</answer>", "<answer>down || dance || Right</answer>", "I refuse.")


def _render_conversation(config: ChatConfig) -> str:
    episode = ChatEpisode(gymnasium.make(SOKOBAN), config, env_id=SOKOBAN, seed=123, split="test")
    episode.reset()
    pages = []
    for turn, answer in enumerate(SNAPSHOT_REPLIES, start=1):
        pages.append(f"=== prompt for turn {turn} ===\n" + _render_messages(episode.messages))
        episode.step(AgentReply(f"<think>step {turn}</think>{answer}" if config.think else answer))
    pages.append("=== final transcript ===\n" + _render_messages(episode.trajectory().messages))
    return "\n".join(pages)


def _render_messages(messages: list[dict[str, str]]) -> str:
    return "".join(f"--- {m['role']} ---\n{m['content']}\n" for m in messages)


@pytest.mark.parametrize("name", sorted(SNAPSHOT_CASES))
def test_prompt_snapshots(name):
    text = _render_conversation(SNAPSHOT_CASES[name])
    path = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("RAGEN_BENCH_UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing snapshot {path}; run with RAGEN_BENCH_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(encoding="utf-8")


# -- the agent protocol at the chat boundary -------------------------------------------------


class _Fixed:
    """Answers every request with the reply built by ``make(index)``; counts its calls."""

    name = "fixed-test"

    def __init__(self, make) -> None:
        self.make = make
        self.requests: list[AgentRequest] = []

    def act(self, requests):
        self.requests.extend(requests)
        return self.make(len(requests))

    def close(self) -> None:
        pass


GOOD = AgentReply("<think>.</think><answer>Right</answer>", prompt_tokens=3, completion_tokens=4, finish_reason="stop")
# Each entry: what the agent's act() returns for a batch of two, and what the error must say.
PROTOCOL_BREAKS = {
    "text None": (lambda n: [GOOD, AgentReply(None)], "text must be a str.*NoneType"),
    "text bytes": (lambda n: [GOOD, AgentReply(b"<answer>Right</answer>")], "text must be a str.*bytes"),
    "text int": (lambda n: [GOOD, AgentReply(7)], "text must be a str.*int"),
    "prompt_tokens bool": (lambda n: [GOOD, AgentReply("x", prompt_tokens=True)], "prompt_tokens.*True"),
    "prompt_tokens -1": (lambda n: [GOOD, AgentReply("x", prompt_tokens=-1)], "prompt_tokens.*-1"),
    "prompt_tokens 1.5": (lambda n: [GOOD, AgentReply("x", prompt_tokens=1.5)], "prompt_tokens.*1.5"),
    "completion_tokens str": (lambda n: [GOOD, AgentReply("x", completion_tokens="3")], "completion_tokens.*'3'"),
    "completion_tokens numpy": (lambda n: [GOOD, AgentReply("x", completion_tokens=np.int64(3))], "completion_tokens"),
    "finish_reason int": (lambda n: [GOOD, AgentReply("x", finish_reason=1)], "finish_reason must be None or a str"),
    "refusal list": (lambda n: [GOOD, AgentReply("", null_content=True, refusal=["no"])], "refusal must be None or a str"),
    "null_content str": (lambda n: [GOOD, AgentReply("", null_content="yes")], "null_content must be a bool.*'yes'"),
    "null_content with text": (lambda n: [GOOD, AgentReply("<answer>Right</answer>", null_content=True)],
                               "a null_content reply has no text"),
    "bare str reply": (lambda n: [GOOD, "<answer>Right</answer>"], "must be an AgentReply, got str"),
    "too few": (lambda n: [GOOD], "1 replies for 2 requests"),
    "too many": (lambda n: [GOOD, GOOD, GOOD], "3 replies for 2 requests"),
    "none at all": (lambda n: None, "must return a list, got NoneType"),
    "a generator": (lambda n: (GOOD for _ in range(n)), "must return a list, got generator"),
}


@pytest.mark.parametrize("case", sorted(PROTOCOL_BREAKS))
def test_a_protocol_break_is_one_agent_error_and_records_nothing_of_the_batch(case):
    make, message = PROTOCOL_BREAKS[case]
    # The first episode would finish on its first (valid) reply if anything were played.
    episodes = [ChatEpisode(Corridor(length=n), ChatConfig(), env_id="test/Corridor", seed=n) for n in (1, 2)]
    finished = []
    with pytest.raises(AgentError, match="agent 'fixed-test' broke the protocol.*" + message):
        run_lockstep(episodes, _Fixed(make), on_finished=finished.append)
    assert finished == []
    assert [e.trajectory().num_turns for e in episodes] == [0, 0] and not any(e.done for e in episodes)


def test_a_bad_reply_stepped_directly_is_refused_before_anything_changes():
    episode = _episode()
    with pytest.raises(AgentError, match="text must be a str"):
        episode.step(AgentReply(None))
    assert episode.trajectory().num_turns == 0
    _say(episode, "Right")  # the episode is still playable
    assert episode.trajectory().num_actions == 1


def test_model_style_agents_get_no_env_and_privileged_ones_a_read_only_view():
    model_like = _Fixed(lambda n: [GOOD] * n)
    run_lockstep([ChatEpisode(Corridor(length=2), ChatConfig(), env_id="c", seed=0)], model_like)
    assert len(model_like.requests) == 2
    assert all(r.live_env is None for r in model_like.requests)
    assert not hasattr(model_like.requests[0], "env")

    class Privileged(_Fixed):
        needs_live_env = True

        def act(self, requests):
            self.seen = [*getattr(self, "seen", []), *(r.live_env.optimal_action() for r in requests)]
            return super().act(requests)

    class Truthy(_Fixed):
        needs_live_env = "yes"  # only exactly True declares the privilege

    privileged, truthy = Privileged(lambda n: [GOOD] * n), Truthy(lambda n: [GOOD] * n)
    for agent in (privileged, truthy):
        run_lockstep([ChatEpisode(Corridor(length=2), ChatConfig(), env_id="c", seed=0)], agent)
    assert all(r.live_env is None for r in truthy.requests)
    assert privileged.seen == [1, 1]  # the live state, at each turn
    view = privileged.requests[0].live_env
    assert view.action_names == ("Left", "Right") and view.clone() is not view.clone()
    assert not any(hasattr(view, name) for name in ("step", "reset", "env", "unwrapped"))
    with pytest.raises(AttributeError):
        view.env = None


def test_finish_reason_and_token_counts_are_recorded_per_turn_and_old_records_load():
    episode = _episode(Corridor(length=3))
    episode.step(AgentReply("<answer>Right", completion_tokens=128, finish_reason="length"))
    episode.step(GOOD)
    turns = episode.trajectory().turns
    assert [t.finish_reason for t in turns] == ["length", "stop"]
    data = episode.trajectory().to_dict()
    assert [t["finish_reason"] for t in data["turns"]] == ["length", "stop"]
    for turn in data["turns"]:
        del turn["finish_reason"]  # a record written before the field existed
    assert [t.finish_reason for t in Trajectory.from_dict(data).turns] == [None, None]


def test_a_reply_without_content_is_malformed_and_recorded_with_the_servers_account():
    episode = _episode(Corridor(length=3))
    episode.step(AgentReply("", completion_tokens=2, finish_reason="content_filter", null_content=True,
                            refusal="I won't \ud83d"))
    episode.step(GOOD)
    null, good = episode.trajectory().turns
    assert (null.valid, null.format_penalty, null.action_ids) == (False, ChatConfig().format_penalty, [])
    assert (null.finish_reason, null.null_content, null.refusal) == ("content_filter", True, "I won't \ud83d")
    data = episode.trajectory().to_dict()
    assert data["turns"][0]["null_content"] is True and data["turns"][0]["refusal"] == "I won't \ud83d"
    # Ordinary turns are written as before the fields existed: no null_content, no refusal.
    assert "null_content" not in data["turns"][1] and "refusal" not in data["turns"][1]
    again = _json_round_trip(episode.trajectory())
    assert again.turns == [null, good]


# -- hostile text: recorded exactly, round-trips through ASCII JSON -------------------------------

HOSTILE_PIECES = [
    "\ud83d",  # a lone high surrogate, as an OpenAI-compatible server may send it
    "\udc00",  # a lone low surrogate
    "\ud83d\ude00",  # a surrogate pair as two code points: plain JSON would read back one
    "\x00",
    "\u202e",  # right-to-left override
    "\u200f",  # right-to-left mark
    "\ufeff",
    "\u2028",
    "\r\n",
    "\x1b[31m",
    "\U0001f600",
    "e\u0301",
    '"\\',
    "<think>",
    "</think>",
    "<answer>",
    "</answer>",
    "||",
    "fish",
]
hostile_text = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=200),
    st.lists(
        st.sampled_from(HOSTILE_PIECES) | st.text(st.characters(exclude_categories=()), max_size=3), max_size=40
    ).map("".join),
)


def _json_round_trip(trajectory: Trajectory) -> Trajectory:
    return Trajectory.from_dict(json.loads(json.dumps(trajectory.to_dict(), ensure_ascii=True)))


@settings(max_examples=300, deadline=None)
@given(st.lists(hostile_text, min_size=1, max_size=3), st.booleans())
def test_any_text_is_recorded_exactly_and_round_trips_through_ascii_json(texts, think):
    # Password takes any str of up to 100 characters, so hostile answers are executed too
    # and reach action_ids and the step info.
    episode = _episode(Password(max_chars=100), ChatConfig(think=think, max_turns=3))
    for text in texts:
        if episode.done:
            break
        episode.step(AgentReply(text, finish_reason=text[:5]))
    trajectory = episode.trajectory()
    for turn, text in zip(trajectory.turns, texts):
        assert turn.raw_response == text and turn.response_chars == len(text) and turn.finish_reason == text[:5]
    assert _json_round_trip(trajectory) == trajectory


@settings(max_examples=300, deadline=None)
@given(hostile_text)
def test_packed_text_survives_ascii_json_and_plain_text_is_left_alone(text):
    packed = pack_text(text)
    assert unpack_text(json.loads(json.dumps(packed, ensure_ascii=True))) == text
    has_pair = any("\ud800" <= a <= "\udbff" and "\udc00" <= b <= "\udfff" for a, b in zip(text, text[1:]))
    assert (packed is text) != has_pair  # only texts holding a surrogate pair change shape


def test_a_megabyte_of_hostile_text_round_trips():
    text = "<think>\ud83d" + "\x00\u202e\udfff\udbff\udfff" * 200_000 + "</think><answer>fish\u200f</answer>"
    episode = _episode(Password(), ChatConfig(max_response_chars=2_000_000))
    episode.step(AgentReply(text))
    trajectory = episode.trajectory()
    assert trajectory.turns[0].raw_response == text
    assert trajectory.turns[0].parsed_actions == ["fish\u200f"]  # the mark is part of the answer, not whitespace
    assert _json_round_trip(trajectory) == trajectory


# -- free-text answers and action names -------------------------------------------------------------


@pytest.mark.parametrize(
    ("env_id", "answer"),
    [
        ("RAGEN/MathQA-v0", "Paris"),
        ("RAGEN/MathQA-v0", "\\frac{1}{2}"),
        ("RAGEN/MathQA-v0", "1,000"),
        ("RAGEN/MathQA-v0", "x = 3"),
        ("RAGEN/MathQA-v0", "10%"),
        ("RAGEN/MathQA-v0", "½"),
        ("RAGEN/Countdown-v0", "3 X 2"),
        ("RAGEN/Countdown-v0", "3 · 2"),
        ("RAGEN/Countdown-v0", "6 − 3 − 2"),
        ("RAGEN/Countdown-v0", "3\u00a0+\u00a02"),
    ],
)
def test_free_text_answers_in_any_notation_are_actions_not_format_errors(env_id, answer):
    episode = ChatEpisode(gymnasium.make(env_id), ChatConfig(), env_id=env_id, seed=0)
    episode.reset()
    _say(episode, answer)
    turn = episode.trajectory().turns[0]
    assert turn.valid and turn.format_penalty == 0.0
    assert turn.action_ids == [answer]


@pytest.mark.parametrize(
    ("written", "valid"),
    [
        ("Oak", True),
        ("OAK", True),
        ("oAk", True),
        ("OA\u212a", False),  # Kelvin sign
        ("\uff2f\uff41\uff4b", False),  # fullwidth letters
        ("Oak\u0307", False),  # a combining dot above
    ],
)
def test_arm_names_match_ignoring_ascii_case_only(written, valid):
    # The Kelvin sign (U+212A) lower-cases to "k" with str.lower; it must not pick the arm Oak.
    env = gymnasium.make("RAGEN/Bandit-v0", low_risk_name="Oak", high_risk_name="Lightning")
    episode = ChatEpisode(env, ChatConfig(), env_id="RAGEN/Bandit-v0", seed=0)
    episode.reset()
    _say(episode, written)
    turn = episode.trajectory().turns[0]
    assert turn.valid == valid
    assert turn.action_ids == ([env.unwrapped.action_names.index("Oak")] if valid else [])


def test_an_agent_editing_its_prompt_in_place_cannot_rewrite_the_record():
    class Scribbler(_Fixed):
        def act(self, requests):
            for request in requests:
                for message in request.messages:
                    message["content"] = "scribbled"
                request.messages.clear()
            return super().act(requests)

    episode = ChatEpisode(Corridor(length=2), ChatConfig(), env_id="c", seed=0)
    [trajectory] = run_lockstep([episode], Scribbler(lambda n: [GOOD] * n))
    assert trajectory.success and len(trajectory.messages) == 2 + 2 * 2
    assert not any(m["content"] == "scribbled" for m in trajectory.messages)
    assert trajectory.messages[1]["content"].startswith("Walk to the goal.")


def test_the_chat_layer_does_not_import_the_agents():
    from tests.conftest import run_python

    code = "import sys, ragen_bench.chat; print(sorted(m for m in sys.modules if m.startswith('ragen_bench.agents')))"
    loaded = run_python(code)
    assert loaded.strip() == "[]"
