"""An episode played through verifiers is eval's episode: same prompts, replies, rewards, record.

For each id, ``ragen-bench eval`` plays a scripted agent on the first test seeds and writes its
records; verifiers plays the same seeds with the scripted endpoint answering as that agent; every
record (eval's trajectory fields: each prompt and reply, the actions, rewards, success) is equal.
The endpoint refuses any prompt that is not the chat layer's, so equal records also mean every
model call verifiers made carried eval's prompt.
"""

from __future__ import annotations

import pytest

from ragen_bench.integrations.scripted_server import ScriptedEndpoint
from tests_verifiers.conftest import play, ragen_eval, serving, trajectories
from tests_verifiers.prompt_agent import PromptEndpoint

CASES = [
    # One turn of several actions (the optimal plans within the 5-action reply budget).
    ("RAGEN/Sokoban-6x6-v0", 6, {}),
    # Multi-turn: one action a reply, so each level takes several turns, each prompt built on the last.
    ("RAGEN/Sokoban-6x6-v0", 4, {"max_actions_per_turn": 1}),
    # One action in the whole episode, the reward drawn from the seed's arm.
    ("RAGEN/Bandit-v0", 8, {}),
    # Free-text answers, no think block.
    ("RAGEN/Countdown-v0", 4, {"think": False}),
    # Stochastic dynamics (slippery ice), several turns.
    ("RAGEN/FrozenLake-4x4-v0", 4, {}),
]


@pytest.mark.parametrize(("env_id", "limit", "chat"), CASES, ids=lambda v: str(v))
def test_optimal_episodes_equal_evals(env_id, limit, chat, tmp_path):
    overrides = [f"chat.{key}={str(value).lower() if isinstance(value, bool) else value}"
                 for key, value in chat.items()]
    expected = ragen_eval(tmp_path / "eval", f"env={env_id}", "agent=optimal", f"limit={limit}", *overrides)
    with serving(ScriptedEndpoint("optimal", chat=chat)) as url:
        got = trajectories(play(url, env=env_id, limit=limit, chat=chat))
    assert [r["seed"] for r in got] == [r["seed"] for r in expected]
    assert got == expected
    if chat.get("max_actions_per_turn") == 1:
        assert max(r["num_turns"] for r in got) > 1, "the multi-turn case played one turn only"


def test_random_episodes_equal_evals_with_samples(tmp_path):
    # The random agent's draws follow (sampling_seed, episode key, turn): two samples per seed are two
    # tasks with eval's keys, so each draws what eval's sample draws.
    expected = ragen_eval(tmp_path / "eval", "env=RAGEN/FrozenLake-4x4-v0", "agent=random", "limit=3", "samples=2",
                          "sampling_seed=7")
    with serving(ScriptedEndpoint("random", sampling_seed=7)) as url:
        got = trajectories(play(url, model="ragen-bench-random", env="RAGEN/FrozenLake-4x4-v0", limit=3, samples=2))
    assert [(r["seed"], r["sample"]) for r in got] == [(r["seed"], r["sample"]) for r in expected]
    assert got == expected
    replies = {(r["seed"], r["sample"]): [turn["raw_response"] for turn in r["turns"]] for r in got}
    assert any(replies[seed, 0] != replies[seed, 1] for seed, _ in replies), "the two samples drew alike"


def test_the_trace_scores_evals_total_reward(optimal_url):
    (episode,) = play(optimal_url, env="RAGEN/Bandit-v0", limit=1)
    (trace,) = episode.traces
    record = trace.info["trajectory"]
    assert trace.reward == pytest.approx(record["total_reward"])
    assert trace.metrics["success"] == float(record["success"])
    assert trace.metrics["progress"] == float(record["success"])  # Bandit has no score of its own
    assert trace.metrics["episode_done"] == 1.0


@pytest.mark.parametrize(("env_id", "chat", "min_turns"), [
    # A history window: from turn 6 on the prompt shows only the last 5 turns.
    ("RAGEN/2048-v0", {"max_turns": 12}, 6),
    ("RAGEN/Sokoban-6x6-v0", {"max_actions_per_turn": 1}, 2),
], ids=str)
def test_a_models_episodes_equal_evals_malformed_replies_and_history_windows(env_id, chat, min_turns, tmp_path):
    overrides = [f"chat.{key}={value}" for key, value in chat.items()]
    expected = ragen_eval(tmp_path / "eval", f"env={env_id}", "agent.name=tests_verifiers.prompt_agent:PromptAgent",
                          "limit=3", *overrides)
    with serving(PromptEndpoint()) as url:
        got = trajectories(play(url, model="prompt-agent", env=env_id, limit=3, chat=chat))
    assert got == expected
    penalties = {turn["format_penalty"] for record in got for turn in record["turns"]}
    assert penalties == {0.0, -0.1}, "the replies should include well-formed and malformed ones"
    assert max(record["num_turns"] for record in got) >= min_turns
