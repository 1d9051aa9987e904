"""The ``baseline`` agent and ``baseline_action()``: the optimal policy where a reference agent exists,
a family's scripted policy (Crafter's collector, MiniHack/NetHack's explorer) where it does not."""

from __future__ import annotations

import importlib.util
import sys

import gymnasium
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench import panels
from ragen_bench.agents import make_agent
from ragen_bench.agents.scripted import BaselineAgent, OptimalAgent
from ragen_bench.chat import AgentError, AgentRequest, ChatConfig, ChatEpisode, LiveEnvView, parse_response, run_lockstep
from ragen_bench.chat.config import budgeted_settings

from .conftest import REPO_ROOT

BABYAI = "RAGEN/BabyAI-GoToLocal-v0"
CRAFTER = "RAGEN/Crafter-v0"
TEXTARENA = "RAGEN/TA-Bandit-v0"
MINIHACK = "RAGEN/MiniHack-Corridor-R3-v0"


def _needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed here")


def _config(env_id: str) -> ChatConfig:
    """The id's declared budget with BALROG's history window, as the balrog-v0 entries play it."""
    return ChatConfig(**budgeted_settings(env_id, {"history_window": 16}))


def _play(env_id: str, seeds, agent, config: ChatConfig | None = None):
    config = config or _config(env_id)
    episodes = [ChatEpisode(gymnasium.make(env_id), config, env_id=env_id, seed=s, split="test") for s in seeds]
    return run_lockstep(episodes, agent)


def _actions(trajectory) -> list[str]:
    return [action for turn in trajectory.turns for action in turn.parsed_actions]


def test_baseline_agent_is_registered_and_needs_the_env_view():
    agent = make_agent("baseline")
    assert isinstance(agent, BaselineAgent) and agent.needs_live_env
    with pytest.raises(AgentError, match="live env view"):
        agent.act([AgentRequest(messages=[], episode_key="k", turn=1)])


def test_on_a_world_with_a_reference_agent_it_plays_as_optimal_does():
    _needs("minigrid")
    seeds = panels.load(BABYAI, "test").seeds[:4]
    baseline = _play(BABYAI, seeds, make_agent("baseline"))
    one_a_turn = _play(BABYAI, seeds, OptimalAgent(max_actions_per_turn=1))
    batched = _play(BABYAI, seeds, OptimalAgent(), config=ChatConfig(**budgeted_settings(BABYAI, {
        "max_actions_per_turn": 5, "max_turns": 100})))
    assert len(baseline) == len(seeds) and any(t.success for t in baseline)
    for ours, optimal, plan in zip(baseline, one_a_turn, batched):
        # The same moves turn by turn (only the thought given with them differs) and the same outcome ...
        assert [turn.parsed_actions for turn in ours.turns] == [turn.parsed_actions for turn in optimal.turns]
        assert _outcome(ours) == _outcome(optimal)
        assert _actions(ours) == _actions(plan)  # ... and the optimal agent's moves however it batches them


def _script(name: str):
    """The measuring script ``scripts/<name>.py`` as a module (the numbers the baseline must reproduce)."""
    import importlib

    sys.path.insert(0, str(REPO_ROOT / "scripts"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(REPO_ROOT / "scripts"))


def _outcome(trajectory) -> tuple:
    return (trajectory.success, trajectory.total_reward, trajectory.num_actions, trajectory.progress)


def test_on_crafter_it_plays_the_collector_and_scores_what_the_script_measures():
    _needs("crafter")
    crafter_baselines = _script("crafter_baselines")
    seeds = list(panels.load(CRAFTER, "test").seeds[:2])
    baseline = _play(CRAFTER, seeds, make_agent("baseline"))
    measured = crafter_baselines.score("collector", seeds)
    assert all(turn.valid and turn.format_penalty == 0.0 for t in baseline for turn in t.turns)
    assert round(100 * sum(t.progress for t in baseline) / len(seeds), 2) == measured["score"]
    assert sum(t.num_actions for t in baseline) / len(seeds) == measured["mean_steps"]
    random_runs = _play(CRAFTER, seeds, make_agent("random", sampling_seed=0))
    assert all(ours.progress > floor.progress for ours, floor in zip(baseline, random_runs)), (
        [t.progress for t in baseline], [t.progress for t in random_runs])


def test_a_seeded_baseline_is_a_function_of_the_seed_and_asking_twice_changes_nothing():
    _needs("crafter")
    env = gymnasium.make(CRAFTER).unwrapped

    def episode(asks: int) -> list[int]:
        env.reset(seed=7)
        actions = []
        for _ in range(60):
            answers = {env.baseline_action() for _ in range(asks)}
            assert len(answers) == 1  # a second question in the same state gets the same answer
            actions.append(answers.pop())
            if env.step(actions[-1])[2]:
                break
        return actions

    assert episode(1) == episode(3)
    view = LiveEnvView(env)
    env.reset(seed=7)
    assert view.baseline_action() == env.baseline_action() == episode(1)[0]


def test_where_there_is_no_baseline_the_reply_names_no_action_like_optimal():
    _needs("textarena")
    env = gymnasium.make(TEXTARENA)
    env.reset(seed=panels.load(TEXTARENA, "test").seeds[0])
    assert env.unwrapped.baseline_action() is None
    request = AgentRequest(messages=[], episode_key="k", turn=1, live_env=LiveEnvView(env))
    for agent in (BaselineAgent(), OptimalAgent()):
        [reply] = agent.act([request])
        assert not parse_response(reply.text, think=True).actions
    [trajectory] = _play(TEXTARENA, panels.load(TEXTARENA, "test").seeds[:1], make_agent("baseline"))
    assert trajectory.turns[0].format_penalty < 0 and not trajectory.turns[0].valid


def test_a_view_of_an_env_without_baseline_action_falls_back_to_its_optimal_action():
    class Legacy(gymnasium.Env):  # an env written before baseline_action (a plugin's)
        action_names = ("a", "b")

        def optimal_action(self, steps_left=None):
            return 1

    assert LiveEnvView(Legacy()).baseline_action() == 1


def test_on_minihack_it_plays_the_explorer_of_the_script():
    _needs("nle")
    nethack_baselines = _script("nethack_baselines")
    seeds = list(panels.load(MINIHACK, "test").seeds[:3])
    baseline = _play(MINIHACK, seeds, make_agent("baseline"))
    for seed, trajectory in zip(seeds, baseline):
        assert (trajectory.progress, trajectory.num_actions) == nethack_baselines.play(MINIHACK, seed, "explore")
