"""One value checker for eval and train configs (ragen_bench.values), and one rule for their
``chat.*`` settings (ragen_bench.chat.config.check_chat): a setting one command refuses, the
other refuses with the same line."""

from __future__ import annotations

import math
from typing import Any

import pytest

from ragen_bench import values
from ragen_bench.chat import ChatConfig
from ragen_bench.chat.config import check_chat
from ragen_bench.eval.compose import compose_config
from ragen_bench.eval.config import ConfigError, chat_config
from ragen_bench.train import config as train_config
from ragen_bench.train.config import TrainConfigError
from tests.conftest import one_line_error


@pytest.mark.parametrize(
    ("value", "hint", "expected"),
    [
        (3, int, 3), (3, float, 3.0), (2.5, float, 2.5), (None, int | None, None), (4, int | None, 4),
        ("x", str, "x"), (False, bool, False), ([1, 2], list[float], [1.0, 2.0]),
        ("all", str | list[str], "all"), (["q", "v"], str | list[str], ["q", "v"]), ({"a": 1}, dict[str, Any], {"a": 1}),
    ],
)
def test_conform_returns_the_declared_form(value, hint, expected):
    conformed = values.conform(value, hint)
    assert conformed == expected and type(conformed) is type(expected)


@pytest.mark.parametrize(
    ("value", "hint", "expected", "where"),
    [
        (True, int, "int", ""), (2.5, int, "int", ""), ("1", float, "float", ""), (True, float, "float", ""),
        (math.nan, float, "a finite number", ""), (math.inf, float | None, "a finite number", ""),
        (1, str, "str", ""), ("true", bool, "bool", ""), (True, int | None, "int or null", ""),
        ([0.9, "x"], list[float], "float", "[1]"), (5, dict[str, Any], "dict", ""),
    ],
)
def test_conform_refuses_with_what_was_expected(value, hint, expected, where):
    with pytest.raises(values.Mismatch) as mismatch:
        values.conform(value, hint)
    assert (mismatch.value.expected, mismatch.value.where) == (expected, where)
    assert not values.fits(value, hint)


def test_check_chat_builds_the_chat_config_from_the_values_as_given():
    config = check_chat({"max_turns": 3, "format_penalty": -1})
    assert config == ChatConfig(max_turns=3, format_penalty=-1)
    assert type(config.format_penalty) is int  # so the template hash is the one these settings always had
    assert check_chat({}) == ChatConfig()


# chat.* settings eval refuses; train refuses each with the same line.
CHAT_REFUSALS = [
    "chat.format_penalty=0.5", "chat.format_penalty=nan", "chat.format_penalty=abc", "chat.max_turns=2.5",
    "chat.max_turns=0", "chat.think=maybe", "++chat.history_window=true", "chat.template=nosuch",
    "chat.action_separator=' '", "+chat.temperature=1",
]


@pytest.mark.parametrize("override", CHAT_REFUSALS)
def test_train_refuses_the_chat_settings_eval_refuses(override):
    with pytest.raises(ConfigError) as eval_error:
        chat_config(compose_config("eval", [override])["chat"])
    with pytest.raises(TrainConfigError) as train_error:
        train_config.from_preset("starpo-s", [override])
    assert str(train_error.value) == str(eval_error.value)
    assert str(train_error.value).startswith("chat"), str(train_error.value)
    assert "\n" not in str(train_error.value)


def test_a_positive_format_penalty_is_refused_naming_the_key():
    with pytest.raises(TrainConfigError, match=r"^chat\.format_penalty must be <= 0 \(it is a penalty\), got 0\.5$"):
        train_config.from_preset("starpo-s", ["chat.format_penalty=0.5"])


def test_train_cli_refuses_a_positive_format_penalty_in_one_line(tmp_path, capsys):
    from ragen_bench.cli import main

    out = tmp_path / "run"
    assert main(["train", "model=tiny", "chat.format_penalty=0.5", f"out={out}", "--dry-run"]) == 2
    one_line_error(capsys, "chat.format_penalty", "0.5")
    assert not out.exists()


def test_train_chat_is_typed_and_config_json_keeps_the_keys_given():
    c = train_config.from_preset("starpo-s", ["chat.max_turns=3", "chat.format_penalty=-1"])
    assert c.chat_config == ChatConfig(**c.chat) and c.chat_config.max_turns == 3
    assert type(c.chat_config.format_penalty) is int
    assert c.to_dict()["chat"] == c.chat == {**train_config.compose("starpo-s")["chat"], "max_turns": 3, "format_penalty": -1}


def test_train_values_keep_their_messages():
    with pytest.raises(TrainConfigError, match=r"^rollout\.groups: expected int, got 'x'$"):
        train_config.from_preset("starpo-s", ["rollout.groups=x"])
    with pytest.raises(TrainConfigError, match=r"^actor\.betas\[1\]: expected float, got 'x'$"):
        train_config.from_preset("starpo-s", ["actor.betas=[0.9,x]"])
    with pytest.raises(TrainConfigError, match=r"^actor\.lr: expected a finite number, got nan$"):
        train_config.from_preset("starpo-s", ["actor.lr=nan"])
    assert train_config.from_preset("starpo-s", ["actor.lr=1"]).actor.lr == 1.0
