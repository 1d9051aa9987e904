"""Every train config key is documented where it is defined, and ``train --help`` / ``--dry-run`` print that text.

* every field of TrainConfig, of each of its sections and of the chat settings has a help text, and
  :func:`keys` reaches every key a composed config holds;
* ``--dry-run`` adds each key's help as a comment and changes nothing else: the values, their order and
  their rendering are the plain ``yaml.safe_dump`` of the config, for every preset;
* ``train --help`` lists every dotted key with its default and its help;
* ``configs/train/base.yaml`` states the dataclasses' defaults (the one source of each default).
"""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from ragen_bench.chat import ChatConfig
from ragen_bench.cli import main
from ragen_bench.starpo.algorithms import PRESETS
from ragen_bench.train import config as train_config
from ragen_bench.train.config_help import commented, dry_run_yaml, keys, shown
from ragen_bench.train.config import TrainConfig

COMMENT = "  # "


def dotted(mapping: dict, prefix: str = "") -> list[str]:
    """Every key of a nested mapping, sections too, as ``rollout`` and ``rollout.group_size``."""
    names = []
    for name, value in mapping.items():
        names.append(prefix + name)
        if isinstance(value, dict):
            names += dotted(value, f"{prefix}{name}.")
    return names


def uncommented(text: str) -> str:
    return "\n".join(line.split(COMMENT, 1)[0] for line in text.splitlines())


def test_every_field_of_every_section_has_a_help():
    found = list(keys())
    assert all(key.help.strip() for key in found), [key.name for key in found if not key.help.strip()]
    sections = {key.name for key in found if key.section}
    assert {"lora", "rollout", "chat", "filter", "actor", "collapse_detection"} <= sections
    assert len(sections) == 16  # the 14 dataclass sections, chat and game


def test_keys_reach_every_key_of_a_composed_config_in_its_order():
    assert [key.name for key in keys()] == dotted(train_config.from_preset("starpo-s").to_dict())


@pytest.mark.parametrize("preset", list(PRESETS))
def test_a_dry_run_only_adds_comments(preset):
    config = train_config.from_preset(preset)
    text = dry_run_yaml(config)
    assert uncommented(text) == yaml.safe_dump(config.to_dict(), sort_keys=False).rstrip()
    assert yaml.safe_load(text) == config.to_dict()
    helps = {key.name: key.help for key in keys()}
    lines = text.splitlines()
    assert lines[0] == f"preset: {preset}{COMMENT}{helps['preset']}"
    assert f"  group_size: 16{COMMENT}{helps['rollout.group_size']}" in lines
    assert f"chat:{COMMENT}{helps['chat']}" in lines
    assert f"  stop_strings:{COMMENT}{helps['rollout.stop_strings']}" in lines  # a block list: on its key's line
    assert sum(COMMENT in line for line in lines) == len(helps)


def test_comments_go_after_a_value_that_takes_several_lines():
    value = "a long folded string " * 8
    text = yaml.safe_dump({"out": value, "empty": [], "quoted": "x  # not a comment", "n": 1}, sort_keys=False,
                          width=40)
    assert len(text.splitlines()) > 4  # the long string is folded over lines
    helps = {"out": "where", "empty": "nothing", "quoted": "q", "n": "a count"}
    result = commented(text, helps)
    assert yaml.safe_load(result) == {"out": value, "empty": [], "quoted": "x  # not a comment", "n": 1}
    assert result.count(COMMENT) == len(helps) + 1  # the quoted value's own '  # ' stays inside its quotes
    assert result.splitlines()[-1] == f"n: 1{COMMENT}a count"


def test_the_cli_dry_run_prints_the_commented_config(capsys):
    assert main(["train", "preset=grpo", "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(dry_run_yaml(train_config.from_preset("grpo")) + "\n\n")


def test_train_help_lists_every_key_with_its_default_and_help(capsys):
    with pytest.raises(SystemExit) as done:
        main(["train", "--help"])
    assert done.value.code == 0
    printed = capsys.readouterr().out
    assert "usage: ragen-bench train" in printed and "--dry-run" in printed
    flat = " ".join(printed.split())  # the help texts are wrapped
    for key in keys():
        if key.section:
            assert f"{key.name}.*: {key.help}" in flat
        else:
            assert f"{key.name}={shown(key.default)} {key.help}" in flat
    assert "rollout.group_size=16 episodes per group" in flat
    assert "threads=null torch threads; null: torch's default" in flat


def test_base_yaml_states_the_dataclass_defaults():
    composed = train_config.from_preset("starpo-s")
    assert composed == TrainConfig(preset="starpo-s", chat=dataclasses.asdict(ChatConfig()))
