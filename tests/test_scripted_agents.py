"""The scripted reference agents through the full chat wrapper."""

from __future__ import annotations

import collections
import gzip
import importlib
import json
import tempfile
from pathlib import Path

import gymnasium
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench import panels
from ragen_bench.agents import AGENT_FACTORIES, make_agent
from ragen_bench.agents.scripted import OptimalAgent, RandomAgent
from ragen_bench.chat import (
    Agent,
    AgentError,
    AgentRequest,
    ChatConfig,
    ChatEpisode,
    LiveEnvView,
    parse_response,
    run_lockstep,
)
from ragen_bench.chat.protocol import clone_env
from ragen_bench.eval import compose_config, run_eval

from .conftest import REPO_ROOT

SOKOBAN = "RAGEN/Sokoban-6x6-v0"
FROZEN_LAKE = "RAGEN/FrozenLake-4x4-v0"


def _episodes(env_id, seeds, config=None, split="test"):
    config = config or ChatConfig()
    return [ChatEpisode(gymnasium.make(env_id), config, env_id=env_id, seed=s, split=split) for s in seeds]


def _request(env_id, seed, turn=1):
    env = gymnasium.make(env_id)
    env.reset(seed=seed)
    return AgentRequest(messages=[], episode_key=f"{env_id}/test/{seed}/0", turn=turn, live_env=LiveEnvView(env))


def test_optimal_agent_solves_every_test_panel_level_of_sokoban_6x6_with_the_default_budget():
    # Measured: the panel's shortest solutions take 1..10 actions (max 10 = the default
    # per-episode budget), so default limits suffice; 2 turns of up to 5 actions each.
    panel = panels.load(SOKOBAN, "test")
    assert panel.seeds == tuple(range(123, 379))
    trajectories = run_lockstep(_episodes(SOKOBAN, panel.seeds), make_agent("optimal"))
    assert all(t.success for t in trajectories)
    assert all(t.num_actions == t.optimal_length for t in trajectories)
    assert max(t.optimal_length for t in trajectories) <= ChatConfig().max_actions_per_episode
    assert all(turn.valid and turn.format_penalty == 0.0 for t in trajectories for turn in t.turns)


@pytest.mark.parametrize("think", [True, False])
def test_scripted_replies_are_well_formed_in_both_variants(think):
    for agent in (RandomAgent(think=think, actions_per_turn=3), OptimalAgent(think=think)):
        [reply] = agent.act([_request(SOKOBAN, 130)])
        parsed = parse_response(reply.text, think=think)
        assert parsed.well_formed and parsed.normalized == reply.text
        assert ("<think>" in reply.text) == think
        assert parsed.actions and set(parsed.actions) <= {"Up", "Down", "Left", "Right"}


def test_optimal_agent_reads_the_env_without_changing_it():
    env = gymnasium.make(FROZEN_LAKE)
    env.reset(seed=5)
    request = AgentRequest(messages=[], episode_key="k", turn=1, live_env=LiveEnvView(env))
    live = env.unwrapped
    before = (live.render_text(), live._steps, live._dynamics_rng.bit_generator.state)
    [reply] = OptimalAgent().act([request])
    assert "<answer>" in reply.text
    assert (live.render_text(), live._steps, live._dynamics_rng.bit_generator.state) == before


@pytest.mark.parametrize(
    ("env_id", "actions"),
    [(FROZEN_LAKE, [3, 2, 1, 1, 0, 2, 3, 3, 1, 2]), (SOKOBAN, [3, 2, 1, 1, 0, 2, 3, 3]), ("RAGEN/Bandit-v0", [1])],
)
def test_a_clone_replays_the_live_env_exactly_and_independently(env_id, actions):
    live = gymnasium.make(env_id).unwrapped
    observation, _ = live.reset(seed=11)
    twin = clone_env(live)
    twin_steps = _play(twin, actions)
    assert live.render() == observation  # stepping the clone left the live env alone
    assert _play(live, actions) == twin_steps  # same randomness, same outcomes


def _play(env, actions):
    """Step outcomes of ``actions`` until the episode ends."""
    outcomes = []
    for action in actions:
        outcomes.append(env.step(action)[:4])
        if outcomes[-1][2] or outcomes[-1][3]:
            break
    return outcomes


@pytest.mark.parametrize("seed", range(8))
def test_batched_plans_on_slippery_ice_follow_the_one_action_per_turn_policy(seed):
    roomy = ChatConfig(max_turns=100, max_actions_per_episode=100)
    batched, single = (
        run_lockstep(_episodes(FROZEN_LAKE, [seed], roomy), OptimalAgent(max_actions_per_turn=k))[0] for k in (5, 1)
    )
    assert [a for t in batched.turns for a in t.action_ids] == [a for t in single.turns for a in t.action_ids]
    assert batched.success == single.success and batched.num_turns <= single.num_turns


def test_random_agent_is_deterministic_per_episode_and_independent_of_batching():
    agent = RandomAgent(sampling_seed=3, actions_per_turn=5)
    a, b = _request(SOKOBAN, 123), _request(SOKOBAN, 124)
    together = agent.act([a, b])
    assert agent.act([b]) == together[1:] and agent.act([a]) == together[:1]
    assert together[0] != together[1]  # different episodes, different streams (5 actions each)
    assert RandomAgent(sampling_seed=4, actions_per_turn=5).act([a]) != together[:1]
    assert agent.act([_request(SOKOBAN, 123, turn=2)]) != together[:1]


class _SeatLike:
    """A view that knows the legal moves now, as a game seat's does (test only)."""

    action_names = tuple(f"m{i}" for i in range(9))

    def __init__(self, legal):
        self.legal = legal

    def legal_actions(self):
        return self.legal


class _NamesOnly:
    """A view without ``legal_actions``, as a single-agent env's: every named action is valid."""

    action_names = _SeatLike.action_names


def _draws(legal, n, **settings):
    agent = RandomAgent(**settings)
    requests = [AgentRequest(messages=[], episode_key=f"game/test/{k}/0", turn=1 + k % 5, live_env=_SeatLike(legal))
                for k in range(n)]
    return [parse_response(reply.text).actions[0] for reply in agent.act(requests)]


def test_random_agent_draws_uniformly_among_the_legal_moves_only():
    legal = [1, 4, 7]
    n = 6000
    counts = collections.Counter(_draws(legal, n))
    assert set(counts) == {"m1", "m4", "m7"}
    sigma = (n * (1 / 3) * (2 / 3)) ** 0.5
    assert all(abs(count - n / 3) < 4 * sigma for count in counts.values()), counts
    # Exactly: the draw u in [0, 1) picks legal[int(u * len(legal))], a third of [0, 1) each.
    assert _draws(legal, 50, sampling_seed=2) == _draws(legal, 50, sampling_seed=2)  # seeded, deterministic
    assert _draws([5], 20) == ["m5"] * 20


def test_random_agent_with_every_move_legal_draws_as_it_always_did():
    """A view without legal_actions (the single-agent envs) and one listing every move give the same replies."""
    every, plain = _SeatLike(list(range(9))), _NamesOnly()
    agent = RandomAgent(sampling_seed=5, actions_per_turn=3)
    requests = [AgentRequest(messages=[], episode_key=f"k/{k}", turn=1, live_env=view)
                for k in range(40) for view in (every, plain)]
    replies = agent.act(requests)
    assert replies[0::2] == replies[1::2]


def test_random_agent_replays_the_committed_leaderboard_entry():
    """The single-agent random stream is unchanged: a slice re-run equals the committed `random` entry."""
    committed = {}
    with gzip.open(REPO_ROOT / "leaderboard" / "submissions" / "random" / "episodes.jsonl.gz") as handle:
        for line in handle:
            record = json.loads(line)
            committed[(record["env_id"], record["seed"])] = record
    recorded = json.loads((REPO_ROOT / "leaderboard" / "submissions" / "random" / "manifest.json").read_text())
    # The entry was recorded before chat budgets: its chat section alone set the limits (budget=none).
    budget = recorded["config"].get("budget", "none")
    with tempfile.TemporaryDirectory() as out:
        run_eval(compose_config("eval", ["suite=ragen-generalization-v0", "agent=random", "limit=2",
                                         f"budget={budget}", f"out={out}", "progress=false"]))
        fresh = [json.loads(line) for line in (Path(out) / "episodes.jsonl").read_text().splitlines()]
    assert len(fresh) == 16
    for record in fresh:
        assert record == committed[(record["env_id"], record["seed"])]


def test_random_agent_answers_free_text_envs_inside_the_action_space():
    request = _request("RAGEN/Countdown-v0", 0)
    [reply] = RandomAgent().act([request])
    [action] = parse_response(reply.text, split_actions=False).actions
    assert request.live_env.action_space.contains(action)


def test_random_agent_mostly_fails_where_optimal_always_succeeds():
    seeds = range(123, 163)
    random_runs = run_lockstep(_episodes(SOKOBAN, seeds), make_agent("random", sampling_seed=0))
    optimal_runs = run_lockstep(_episodes(SOKOBAN, seeds), make_agent("optimal"))
    assert sum(t.success for t in random_runs) < sum(t.success for t in optimal_runs) == len(seeds)


def test_scripted_agents_need_the_env_view():
    request = AgentRequest(messages=[], episode_key="k", turn=1)
    for agent in (RandomAgent(), OptimalAgent()):
        with pytest.raises(AgentError, match="live env view"):
            agent.act([request])


def test_make_agent_table():
    assert set(AGENT_FACTORIES) >= {"random", "optimal", "hf", "openai", "vllm"}
    agent = make_agent("optimal", think=False, max_actions_per_turn=2)
    assert isinstance(agent, Agent) and agent.name == "optimal" and agent.max_actions_per_turn == 2


@pytest.mark.parametrize("name", sorted(AGENT_FACTORIES))
def test_every_factory_in_the_table_exists(name):
    # Importing the module, not only finding it: a misspelt module or factory name fails here.
    module_name, factory_name = AGENT_FACTORIES[name].split(":")
    assert callable(getattr(importlib.import_module(module_name), factory_name))


def test_optimal_agent_on_slippery_ice_plans_for_the_chat_budget_not_the_env_cap():
    # Within the default 10-action budget the best achievable success on the test panel is
    # the mean of the 10-step optimal success probabilities; planning for the env's
    # 100-step cap instead (safe but slow routes) falls clearly short of it.
    budget = ChatConfig().max_actions_per_episode
    seeds = panels.load(FROZEN_LAKE, "test").seeds
    env = gymnasium.make(FROZEN_LAKE).unwrapped
    expected, patient = 0.0, 0.0
    for seed in seeds:
        env.reset(seed=seed)
        expected += env._solution.success_probability(env.player_state, budget) / len(seeds)
        patient += env._solution.success_probability(env.player_state, env.max_steps) / len(seeds)
    successes = sum(t.success for t in run_lockstep(_episodes(FROZEN_LAKE, seeds), make_agent("optimal")))
    rate = successes / len(seeds)
    standard_error = (expected * (1 - expected) / len(seeds)) ** 0.5
    assert abs(rate - expected) < 3 * standard_error
    assert patient > expected + 0.2  # the two horizons really differ on these lakes


def test_optimal_action_horizon_changes_the_choice_somewhere():
    env = gymnasium.make(FROZEN_LAKE).unwrapped
    differing = 0
    for seed in panels.load(FROZEN_LAKE, "test").seeds[:64]:
        env.reset(seed=seed)
        differing += env.optimal_action(steps_left=3) != env.optimal_action()
    assert differing > 0
