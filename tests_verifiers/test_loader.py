"""verifiers' own loader finds the ragen-bench-vf plugin, and its tasks are eval's episodes."""

from __future__ import annotations

import gymnasium
import pytest
import verifiers.v1 as vf
from verifiers.v1.utils import loaders

from ragen_bench.integrations import verifiers as bridge
from ragen_bench.integrations.tasks import chat_config, first_messages
from tests_verifiers.conftest import ragen_eval


def test_the_plugin_id_resolves_to_the_taskset_env_and_harness():
    assert loaders.taskset_class("ragen-bench-vf") is bridge.RagenTaskset
    assert loaders.environment_class("ragen-bench-vf") is bridge.RagenEnv
    assert loaders.env_config_type("ragen-bench-vf") is bridge.RagenEnvConfig
    # The seat's default program is the plugin's own in-process harness, not verifiers' bash one.
    assert loaders.default_harness_id("ragen-bench-vf") == "ragen-bench-vf"
    assert loaders.harness_class("ragen-bench-vf") is bridge.ChatLayerHarness


def test_load_environment_from_a_plain_config():
    config = vf.resolve_env_config({"taskset": {"id": "ragen-bench-vf", "env": "RAGEN/Bandit-v0", "limit": 2}})
    env = vf.load_environment(config)
    assert isinstance(env, bridge.RagenEnv)
    # Local runtime (verifiers' default is a hosted sandbox), harness resolved to the plugin's.
    assert env.config.player.runtime.type == "subprocess"
    assert env.config.agent_harnesses()["player"].id == "ragen-bench-vf"
    assert [task.key for task in env.taskset] == ["RAGEN/Bandit-v0/test/123/0", "RAGEN/Bandit-v0/test/124/0"]


def test_a_suites_tasks_are_evals_episodes_with_evals_first_prompts(tmp_path):
    suite = "ragen-sokoban-generalization-v0"
    records = ragen_eval(tmp_path / "eval", f"suite={suite}", "agent=random", "limit=2", "samples=2")
    tasks = list(bridge.load_environment(suite=suite, limit=2, samples=2).taskset)
    assert sorted(task.key for task in tasks) == [f"{r['env_id']}/{r['split']}/{r['seed']}/{r['sample']}"
                                                   for r in records]
    assert len({task.data.env_id for task in tasks}) > 1
    for task in tasks:
        data = task.data
        expected = first_messages(gymnasium.make(data.env_id), data.env_id, data.seed, chat_config(data.env_id),
                                  data.split)
        assert [{"role": m.role, "content": m.content} for m in data.prompt] == expected


@pytest.mark.parametrize(("keys", "message"), [
    ({"env": "RAGEN/TicTacToe-v0"}, "a game has two seats"),
    ({"env": "RAGEN/No-such-v0"}, "unknown env id"),
    ({"suite": "no-such-suite"}, "no-such-suite"),
    ({"env": "RAGEN/Bandit-v0", "split": "nope"}, "no 'nope' panel"),
    ({"env": "RAGEN/Bandit-v0", "chat": {"max_turns": 0}}, "max_turns"),
    ({"env": "RAGEN/Bandit-v0", "chat": {"bogus": 1}}, "chat.bogus"),
    ({"env": "RAGEN/Bandit-v0", "limit": 0}, "greater than or equal to 1"),
])
def test_bad_keys_are_config_errors_naming_the_problem(keys, message):
    with pytest.raises(ValueError, match=message):
        bridge.env_config(**keys)


def test_no_target_is_refused_before_any_episode():
    with pytest.raises(ValueError, match="exactly one of --env.taskset.env ID or --env.taskset.suite NAME"):
        vf.load_environment(bridge.RagenEnvConfig(taskset={"id": "ragen-bench-vf"}))


def test_a_suites_episode_counts_cut_its_tasks_as_in_evals_plan(tmp_path, monkeypatch):
    """A suite with episode counts (BALROG's protocol): the tasks are eval's plan, the counted panels cut."""
    from ragen_bench import panels, suites
    from ragen_bench.eval import compose_config
    from ragen_bench.eval.config import load
    from ragen_bench.eval.plan import plan

    monkeypatch.setattr(suites, "suites_dir", lambda: tmp_path)  # a stand-in, never frozen
    monkeypatch.setitem(suites.DEFINITIONS, "counted-v0", ("Counts.", (("s", ("RAGEN/Sokoban-6x6-v0", "train"), (
        ("RAGEN/Sokoban-6x6-v0", "test", "in-distribution", 3), ("RAGEN/Bandit-v0", "test", "environment"))),)))
    suites.write(suites.generate("counted-v0"))
    run = load({**compose_config("eval", ["suite=counted-v0", "limit=5"]), "out": str(tmp_path / "run")})
    expected = plan([panels.load(*target) for target in run.targets], samples=1, limit=5, shard=(0, 1),
                    counts=run.counts)
    tasks = bridge.episode_plan(bridge.RagenTasksetConfig(id="ragen-bench-vf", suite="counted-v0", limit=5))
    assert tasks == [instance.slot for instance in expected]
    assert [env_id for env_id, *_ in tasks].count("RAGEN/Sokoban-6x6-v0") == 3 and len(tasks) == 8
