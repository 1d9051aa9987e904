"""Constructor arguments: each family's config dataclass and the one check in envs/config.py."""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass

import numpy as np
import pytest

from ragen_bench.envs.config import EnvConfig, IntIn, IsBool, OneOf, OrNone, PathOrNone, RealIn, Text, setting
from ragen_bench.registry import ENTRIES

FAMILIES = sorted({row.family for row in ENTRIES})


def _config_class(family: str) -> type[EnvConfig]:
    """The one EnvConfig subclass a family's package exports."""
    package = importlib.import_module(f"ragen_bench.envs.{family}")
    found = [
        getattr(package, name)
        for name in package.__all__
        if isinstance(getattr(package, name), type) and issubclass(getattr(package, name), EnvConfig)
    ]
    assert len(found) == 1, (family, found)
    return found[0]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_declares_each_argument_with_a_rule_and_help(family):
    config = _config_class(family)
    for field in dataclasses.fields(config):
        assert field.metadata.get("rule") is not None, (family, field.name)
        assert field.metadata.get("help", "").strip(), (family, field.name)
    assert config.help().keys() == {field.name for field in dataclasses.fields(config)}


@pytest.mark.parametrize("row", ENTRIES, ids=lambda row: row.id)
def test_every_registered_rows_kwargs_pass_its_familys_check(row):
    # The id table and the configs agree without making a single env (or importing a library).
    kwargs = {key: value for key, value in row.kwargs.items() if key != "render_mode"}
    config = _config_class(row.family).from_kwargs(kwargs)
    assert {key: getattr(config, key) for key in kwargs} == {
        key: tuple(value) if isinstance(value, list) else value for key, value in kwargs.items()
    }


def test_the_hand_written_validators_are_gone():
    from ragen_bench.envs.base import TextEnv

    assert not [name for name in vars(TextEnv) if name.endswith("_arg")]


def test_envs_base_still_offers_the_config_names_plugins_import_from_it():
    # docs/architecture.md taught plugins `from ragen_bench.envs.base import EnvConfig, IntIn, setting`;
    # the machinery moved to envs/config.py, and those imports must keep giving the same objects.
    from ragen_bench.envs import base, config

    names = ("EnvConfig", "IntIn", "IsBool", "OneOf", "OrNone", "PathOrNone", "RealIn", "Rule", "Text", "arg_error",
             "setting")
    assert [name for name in names if getattr(base, name) is not getattr(config, name)] == []


@dataclass(frozen=True)
class Example(EnvConfig):
    low: int = setting(2, rule=IntIn(1, 5), help="at least one")
    high: int = setting(3, rule=IntIn("low", 5), help="at least low")
    rate: float = setting(0.5, rule=RealIn(0.0, 1.0, low_open=True), help="in (0, 1]")
    flag: bool = setting(True, rule=IsBool(), help="a flag")
    mode: str | None = setting(None, rule=OrNone(OneOf(("a", "b"))), help="a mode or None")
    name: str = setting("Oak", rule=Text(8, pattern="[A-Z][a-z]+", pattern_says="a capitalised word"), help="a name")
    path: str | None = setting(None, rule=PathOrNone(), help="a file")


def test_checked_values_come_back_as_plain_python_values():
    config = Example.from_kwargs(dict(low=np.int64(2), rate=np.float32(1.0), flag=np.bool_(False)), owner="ExampleEnv")
    assert (type(config.low), type(config.rate), type(config.flag)) == (int, float, bool)
    assert config == Example(low=2, high=3, rate=1.0, flag=False)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(low=0), ValueError, "ExampleEnv: low must be an int in 1..5, got 0"),
        (dict(low=True), TypeError, "ExampleEnv: low must be an int in 1..5, got True"),
        (dict(low=4), ValueError, "ExampleEnv: high must be an int in 4..5, got 3"),  # bound from an earlier field
        (dict(rate=0.0), ValueError, "ExampleEnv: rate must be a number in (0.0, 1.0], got 0.0"),
        (dict(rate=float("nan")), ValueError, "ExampleEnv: rate must be a number in (0.0, 1.0], got nan"),
        (dict(flag=1), TypeError, "ExampleEnv: flag must be True or False, got 1"),
        (dict(mode="c"), ValueError, "ExampleEnv: mode must be one of ['a', 'b'], got 'c'"),
        (dict(mode=["a"]), ValueError, "ExampleEnv: mode must be one of ['a', 'b'], got ['a']"),
        (dict(name="oak"), ValueError, "ExampleEnv: name must be a capitalised word, got 'oak'"),
        (dict(name="Oakwoodland"), ValueError, "ExampleEnv: name must be a non-empty printable ASCII str"),
        (dict(path=3), TypeError, "ExampleEnv: path must be a path or None, got 3"),
        (dict(size=4), TypeError, "ExampleEnv: unknown arguments ['size'] (known: low, high, rate, flag, mode, name, path)"),
    ],
)
def test_a_broken_rule_is_one_message_naming_the_owner_the_argument_and_the_value(kwargs, error, message):
    with pytest.raises(error) as caught:
        Example.from_kwargs(kwargs, owner="ExampleEnv")
    assert str(caught.value).startswith(message)


def test_a_config_built_directly_is_checked_by_validate_and_required_fields_are_named():
    with pytest.raises(ValueError, match="^Example: low must be"):
        Example(low=9).validate()

    @dataclass(frozen=True)
    class Needs(EnvConfig):
        what: str = setting(rule=OneOf(("x",)), help="required")

    with pytest.raises(TypeError, match=r"^NeedsEnv: missing required arguments \['what'\]"):
        Needs.from_kwargs({}, owner="NeedsEnv")
    assert Needs.from_kwargs({"what": "x"}).what == "x"


def test_an_env_keeps_its_checked_config_and_each_field_as_an_attribute():
    from ragen_bench.envs.frozen_lake import FrozenLakeConfig, FrozenLakeEnv

    env = FrozenLakeEnv(size=np.int64(5), is_slippery=False)
    assert env.config == FrozenLakeConfig(size=5, is_slippery=False)
    assert (env.size, env.is_slippery, env.max_steps) == (5, False, 100)
