"""One source for each default and each rule (workspace DESIGN.md, "One source for each default and rule").

Where a default is written twice (a dataclass field and a yaml key), these tests say the copies
agree; where a rule used to be restated, they say every user calls the one function.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect

import pytest
from omegaconf import OmegaConf

from ragen_bench.agents import AGENT_FACTORIES, make_agent
from ragen_bench.agents.sampling import EVAL_SAMPLING, MAX_TEMPERATURE, SAMPLING_KEYS, SamplingSettings, check_temperature
from ragen_bench.chat import ChatConfig
from ragen_bench.chat.protocol import AgentError
from ragen_bench.data import configs_root
from ragen_bench.eval.compose import compose_config
from ragen_bench.integrations.verl import recipe
from ragen_bench.starpo import algorithms
from ragen_bench.train import config as train_config
from ragen_bench.train.config import RolloutConfig, TrainConfigError
from ragen_bench.train.policy_agent import PolicyAgent, make_policy_agent

CHAT_DEFAULTS = {field.name: field.default for field in dataclasses.fields(ChatConfig)}


# -- chat.*: ChatConfig's fields, one yaml that eval and train both compose --------------------------


def test_the_chat_yaml_says_chat_configs_field_defaults():
    assert OmegaConf.to_container(OmegaConf.load(configs_root() / "chat" / "default.yaml")) == CHAT_DEFAULTS


def test_eval_composes_chat_configs_defaults():
    assert compose_config("eval", [])["chat"] == CHAT_DEFAULTS


@pytest.mark.parametrize("preset", algorithms.PRESETS)
def test_every_train_preset_composes_chat_configs_defaults(preset):
    # Presets may restate a key (ragen-sokoban names RAGEN's 5 turns); none changes a default.
    assert train_config.compose(preset)["chat"] == CHAT_DEFAULTS


def test_no_other_top_level_config_restates_the_chat_section():
    # A second `chat:` block would be a copy free to drift from configs/chat/default.yaml.
    for name in ("eval.yaml", "train/base.yaml"):
        assert "chat" not in OmegaConf.load(configs_root() / name), name


def test_a_chat_override_still_reaches_eval_and_train():
    assert compose_config("eval", ["chat.max_turns=3"])["chat"]["max_turns"] == 3
    assert train_config.from_preset("starpo", ["chat.max_turns=3"]).chat_config.max_turns == 3


# -- the veRL recipe reads chat.* as the typed ChatConfig -----------------------------------------------


def _response_length(config) -> int:
    overrides = dict(item.split("=", 1) for item in recipe.verl_overrides(config))
    return int(overrides["data.max_response_length"])


def _with_chat(config, **changes):
    """``config`` with ``chat`` changed as given (a value None drops the key), bypassing the config's own check."""
    chat = {key: value for key, value in {**config.chat, **changes}.items() if value is not None}
    return dataclasses.replace(config, chat=chat)


def test_the_recipe_takes_max_turns_from_chat_config_when_chat_omits_it():
    config = _with_chat(train_config.from_preset("starpo", ["model=tiny"]), max_turns=None)
    assert "max_turns" not in config.chat
    turns = ChatConfig().max_turns
    assert _response_length(config) == turns * config.rollout.max_new_tokens + (turns - 1) * recipe.BRIDGE_TOKENS


def test_the_recipe_follows_a_changed_max_turns():
    config = train_config.from_preset("starpo", ["model=tiny", "chat.max_turns=3"])
    assert _response_length(config) == 3 * config.rollout.max_new_tokens + 2 * recipe.BRIDGE_TOKENS


def test_the_recipe_reads_chat_through_the_train_configs_rule():
    config = _with_chat(train_config.from_preset("starpo", ["model=tiny"]), max_turns=0)
    with pytest.raises(TrainConfigError, match=r"chat\.max_turns must be >= 1"):
        recipe.verl_overrides(config)


# -- temperature: one rule (agents.sampling.check_temperature), greedy allowed only where nothing trains ------

REFUSED_EVERYWHERE = (-0.5, MAX_TEMPERATURE + 0.5, float("nan"), float("inf"))


@pytest.mark.parametrize("greedy", [True, False])
def test_the_rule_itself(greedy):
    check_temperature(MAX_TEMPERATURE, greedy=greedy)
    check_temperature(0.7, greedy=greedy)
    for value in REFUSED_EVERYWHERE:
        with pytest.raises(ValueError, match=r"^temperature must be "):
            check_temperature(value, greedy=greedy)
    if greedy:
        check_temperature(0.0, greedy=True)
    else:
        with pytest.raises(ValueError, match=r"must be > 0"):
            check_temperature(0.0, greedy=False)


def test_eval_agents_allow_greedy_and_refuse_what_the_rule_refuses():
    assert SamplingSettings(temperature=0.0).temperature == 0.0
    for value in REFUSED_EVERYWHERE:
        with pytest.raises(ValueError, match="temperature must be >= 0 and <= 10"):
            SamplingSettings(temperature=value)
    # Through the factory table too, before any model or endpoint is touched.
    with pytest.raises(AgentError, match="agent 'openai': temperature must be >= 0 and <= 10"):
        make_agent("openai", model="m", temperature=MAX_TEMPERATURE + 1)


def test_the_policy_agent_refuses_greedy_before_touching_its_model():
    # The rule runs first, so no model is needed to see it (None would fail at any later line).
    with pytest.raises(ValueError, match=r"policy agent 'p': temperature must be > 0 and <= 10"):
        PolicyAgent(None, None, sampling=SamplingSettings(temperature=0.0), name="p")


@pytest.mark.parametrize(("override", "refused"), [
    ("rollout.temperature=0", True), ("rollout.temperature=10.5", True), ("rollout.temperature=10", False),
    ("val.temperature=0", False), ("val.temperature=10.5", True), ("val.temperature=-1", True),
])
def test_train_applies_the_rule_per_setting(override, refused):
    if refused:
        key = override.split("=")[0]
        with pytest.raises(TrainConfigError, match=rf"^{key}: must be "):
            train_config.from_preset("starpo", [override])
    else:
        train_config.from_preset("starpo", [override])


# -- agent defaults: a factory called from Python behaves as `ragen-bench eval agent=NAME` -------------------

AGENT_YAMLS = sorted(p.name.removesuffix(".yaml") for p in (configs_root() / "agent").iterdir() if p.name.endswith(".yaml"))


def _factory(name: str):
    module_name, _, attribute = AGENT_FACTORIES[name].partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


@pytest.mark.parametrize("name", AGENT_YAMLS)
def test_every_agent_factory_defaults_to_what_its_yaml_says(name):
    settings = compose_config("eval", [f"agent={name}", "agent.model=some/dir"] if name == "openai" else [f"agent={name}"])
    settings = dict(settings["agent"])
    assert settings.pop("name") == name
    parameters = inspect.signature(_factory(name)).parameters
    compared = 0
    for key, value in settings.items():
        default = parameters[key].default
        if default is inspect.Parameter.empty:  # a required setting (openai's model) has no default to agree with
            continue
        if key == "engine_options" and default is None:  # vllm: None and {} both pass no extra engine options
            default = {}
        assert _plain(default) == value, f"agent {name}: {key}: the factory says {default!r}, configs/agent/{name}.yaml {value!r}"
        compared += 1
    assert compared == len(settings) - (name == "openai")


def _sampling_defaults(factory) -> dict:
    parameters = inspect.signature(factory).parameters
    return {key: parameters[key].default for key in SAMPLING_KEYS}


@pytest.mark.parametrize("name", ["hf", "vllm", "openai"])
def test_eval_agents_take_the_sampling_keywords_with_evals_defaults(name):
    assert _sampling_defaults(_factory(name)) == dataclasses.asdict(EVAL_SAMPLING)
    assert EVAL_SAMPLING.temperature == 0.0  # greedy: an evaluation repeats without a seed


def test_the_policy_agent_takes_the_sampling_keywords_with_trains_defaults():
    rollout = RolloutConfig()
    assert _sampling_defaults(make_policy_agent) == {
        "temperature": rollout.temperature, "top_p": rollout.top_p, "max_new_tokens": rollout.max_new_tokens,
        "sampling_seed": 0,
    }
    assert inspect.signature(make_policy_agent).parameters["generate_batch"].default == rollout.generate_batch
