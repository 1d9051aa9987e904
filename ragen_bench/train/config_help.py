"""What ``ragen-bench train --help`` and ``--dry-run`` say about each key, read from the config dataclasses.

Each field's help is declared where the field is (:func:`ragen_bench.values.documented`, in
:class:`~ragen_bench.train.config.TrainConfig` and :mod:`ragen_bench.train.sections`): :func:`keys` walks them,
:func:`help_text` lists them with their defaults, :func:`commented` adds them to a resolved config's YAML.
"""

from __future__ import annotations

import dataclasses
import json
import textwrap
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple, get_type_hints

import yaml

from ragen_bench.chat import ChatConfig
from ragen_bench.train.config import TrainConfig
from ragen_bench.values import documented



@dataclasses.dataclass(frozen=True)
class GameRules:
    """The ``game.*`` keys (eval's; checked with the train config's other keys)."""

    max_retries: int = documented(2, help="invalid replies a seat may retry per move (0..10)")
    on_illegal: str = documented("forfeit", help="then: forfeit (the seat loses) or random (a random legal move is "
                                 "played for it)")


# Sections held as a mapping (what config.json records) and checked as a dataclass: their keys are its fields.
MAPPED_SECTIONS = {"chat": ChatConfig, "game": GameRules}


class Key(NamedTuple):
    """One config key: its dotted name, its default (a section's: the section) and its help."""

    name: str
    default: Any
    help: str
    section: bool


def keys(cls: type = TrainConfig, prefix: str = "") -> Iterator[Key]:
    """Every key of ``cls`` in the order of its fields, each section before its own keys."""
    hints = get_type_hints(cls)
    for field in dataclasses.fields(cls):
        name = prefix + field.name
        default = field.default if field.default_factory is dataclasses.MISSING else field.default_factory()
        section = hints[field.name] if dataclasses.is_dataclass(hints[field.name]) else MAPPED_SECTIONS.get(name)
        yield Key(name, default, field.metadata["help"], section is not None)
        if section is not None:
            yield from keys(section, name + ".")


def shown(value: Any) -> str:
    """A default as it is written in an override (``null``, ``true``, ``["</answer>"]``)."""
    if isinstance(value, list):
        return json.dumps(value)  # quoted items: Hydra's override grammar reads [</answer>] as no list
    return yaml.safe_dump(value, default_flow_style=True, width=float("inf")).removesuffix("\n...\n").strip()


def help_text(width: int = 100) -> str:
    """Every key with its default and help, as ``train --help`` prints them after the usual help."""
    lines = ["", *textwrap.wrap("The keys (KEY=VALUE), their defaults and what they mean; a preset changes a few of "
                                "them (configs/train/NAME.yaml), and --dry-run prints one resolved:", width)]
    for key in keys():
        if key.section:
            lines += ["", f"{key.name}.*: {key.help}"]
        else:
            lines.append(f"  {key.name}={shown(key.default)}")
            lines += textwrap.wrap(key.help, width, initial_indent=" " * 6, subsequent_indent=" " * 6,
                                   break_on_hyphens=False)
    return "\n".join(lines) + "\n"


def commented(text: str, helps: Mapping[str, str]) -> str:
    """``text``, a YAML mapping, with ``helps[dotted key]`` as a comment at the end of each key's value: on the
    key's own line for a block section or list, after the value's last line for anything else."""
    lines = text.splitlines()
    ends: dict[int, str] = {}

    def visit(node: yaml.MappingNode, prefix: str) -> None:
        for key_node, value_node in node.value:
            name = prefix + key_node.value
            block = isinstance(value_node, yaml.CollectionNode) and not value_node.flow_style
            line = key_node.start_mark.line if block else _last_line(value_node)
            if name in helps:
                ends[line] = helps[name]
            if isinstance(value_node, yaml.MappingNode):
                visit(value_node, name + ".")

    visit(yaml.compose(text), "")
    return "\n".join(f"{line}  # {ends[index]}" if index in ends else line for index, line in enumerate(lines))


def _last_line(node: yaml.Node) -> int:
    """The line a scalar or flow value ends on (its end mark sits at the start of the next line after a newline)."""
    end = node.end_mark
    return end.line - 1 if end.column == 0 and end.line > node.start_mark.line else end.line


def dry_run_yaml(config: TrainConfig) -> str:
    """``config`` as ``--dry-run`` prints it: its values in the fields' order, each key's help as a comment."""
    text = yaml.safe_dump(config.to_dict(), sort_keys=False).rstrip()
    return commented(text, {key.name: key.help for key in keys()})
