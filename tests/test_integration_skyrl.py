"""SkyRL-gym's own ``make`` plays every family's ids as eval plays them (ragen_bench.integrations.skyrl).

An episode is played locally by a scripted agent through the eval harness's ``run_lockstep``;
its recorded replies are then sent, one ``step`` each, to the env ``skyrl_gym.make`` builds for
the same seed, and every prompt, reward and ending must be the local episode's.
"""

from __future__ import annotations

from importlib.util import find_spec

import gymnasium
import pytest

skyrl_gym = pytest.importorskip("skyrl_gym")

import ragen_bench  # noqa: E402,F401  (registers the env ids)
from ragen_bench.agents import make_agent  # noqa: E402
from ragen_bench.chat import ChatEpisode, run_lockstep  # noqa: E402
from ragen_bench.integrations import skyrl  # noqa: E402
from ragen_bench.integrations.tasks import chat_config  # noqa: E402

# One or two ids of every single-agent family, each with the scripted agent that plays it quickly
# (random: 2048's and the cube's optimal agents search; random also exercises invalid replies).
SAMPLE = [
    ("RAGEN/Sokoban-6x6-v0", "optimal"),
    ("RAGEN/Sokoban-6x6-v0", "random"),
    ("RAGEN/FrozenLake-4x4-v0", "optimal"),
    ("RAGEN/Bandit-v0", "random"),
    ("RAGEN/Countdown-v0", "optimal"),
    ("RAGEN/MathQA-v0", "random"),
    ("RAGEN/RubiksCube-2x2-Depth1-v0", "optimal"),
    ("RAGEN/2048-v0", "random"),
    ("RAGEN/Sudoku-4x4-v0", "optimal"),
    pytest.param("RAGEN/RG-basic_arithmetic-v0", "optimal",
                 marks=pytest.mark.skipif(not find_spec("reasoning_gym"), reason="extra rg")),
    pytest.param("RAGEN/TWX-coin-v0", "optimal",
                 marks=pytest.mark.skipif(not find_spec("textworld_express"), reason="extra twx")),
]
SEEDS = (123, 124)


@pytest.fixture(scope="module", autouse=True)
def registered():
    skyrl.register_all()


def _local(env_id, agent_name, seed):
    episode = ChatEpisode(gymnasium.make(env_id), chat_config(env_id), env_id=env_id, seed=seed, split="test")
    return run_lockstep([episode], make_agent(agent_name))[0]


@pytest.mark.parametrize("env_id, agent_name", SAMPLE)
def test_skyrl_make_plays_the_eval_episode(env_id, agent_name):
    for seed in SEEDS:
        local = _local(env_id, agent_name, seed)
        env = skyrl_gym.make(env_id, env_config={}, extras={"seed": seed, "split": "test"})
        assert isinstance(env, skyrl_gym.envs.base_text_env.BaseTextEnv)
        messages, _ = env.init([{"role": "user", "content": "the row's prompt, replaced"}])
        assert messages == local.messages[:2]
        for number, turn in enumerate(local.turns, start=1):
            out = env.step(turn.raw_response)
            assert out["reward"] == turn.reward
            assert out["done"] == (number == len(local.turns))
            # Turn k's user message sits at 1 + 2k, after the reply at 2k.
            expected = [] if out["done"] else [local.messages[2 * number + 1]]
            assert out["observations"] == expected
        assert out["metadata"]["success"] == local.success
        assert env.get_metrics() == {"success": float(local.success), "progress": float(local.success),
                                     "total_reward": local.total_reward, "turns": local.num_turns}
        env.close()


def test_the_seed_may_come_in_extra_info_and_must_come():
    env = skyrl_gym.make("RAGEN/Sokoban-6x6-v0", env_config={}, extras={"extra_info": {"seed": 7}})
    assert env.init([])[0] == _local("RAGEN/Sokoban-6x6-v0", "optimal", 7).messages[:2]
    with pytest.raises(ValueError, match="no integer 'seed'"):
        skyrl_gym.make("RAGEN/Sokoban-6x6-v0", env_config={}, extras={"seed": "7"})


def test_env_config_chat_overrides_the_budget():
    env = skyrl_gym.make("RAGEN/Sokoban-6x6-v0", env_config={"chat": {"max_turns": 1}}, extras={"seed": 3})
    env.init([])
    assert env.max_turns == 1 and env.step("<answer>Up</answer>")["done"]


def test_register_all_registers_every_id_once_and_refuses_a_foreign_one():
    assert skyrl.register_all() == []  # the fixture registered them all
    for env_id in ragen_bench.registry.ENV_IDS:
        assert skyrl_gym.registry[env_id].entry_point == skyrl.ENTRY_POINT
    skyrl_gym.envs.registration.deregister("RAGEN/Bandit-v0")
    skyrl_gym.register("RAGEN/Bandit-v0", entry_point="skyrl_gym.envs.gsm8k.env:GSM8kEnv")
    try:
        with pytest.raises(ValueError, match="already registers 'RAGEN/Bandit-v0'"):
            skyrl.register_all()
    finally:
        skyrl_gym.envs.registration.deregister("RAGEN/Bandit-v0")
        assert skyrl.register_all() == ["RAGEN/Bandit-v0"]


def test_dataset_rows_hold_eval_prompts_and_panel_seeds():
    rows = skyrl.dataset_rows("RAGEN/FrozenLake-4x4-v0", "test", limit=3)
    assert [row["seed"] for row in rows] == [123, 124, 125]
    assert rows[1]["prompt"] == _local("RAGEN/FrozenLake-4x4-v0", "optimal", 124).messages[:2]
    assert {row["env_class"] for row in rows} == {"RAGEN/FrozenLake-4x4-v0"}
