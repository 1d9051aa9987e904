"""Constructor arguments: the one check of every env family's config dataclass.

Each family declares its arguments once, as an :class:`EnvConfig` subclass, each field made by
:func:`setting` with its default, its :class:`Rule` and its help text.  ``TextEnv._configure``
(:mod:`ragen_bench.envs.base`) runs :meth:`EnvConfig.from_kwargs` on the env's keyword
arguments, so unknown, missing, mistyped (``TypeError``) and out-of-range (``ValueError``)
arguments are refused up front, each in one message naming the env and the argument.

The rules: :class:`IntIn`, :class:`RealIn`, :class:`IsBool`, :class:`OneOf`, :class:`Text`,
:class:`PathOrNone`, :class:`OrNone`, or a family's own :class:`Rule` subclass; rules across
fields go in :meth:`EnvConfig.check_together`.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
import re
from collections.abc import Collection, Mapping
from typing import Any, TypeVar

import numpy as np


def arg_error(owner: str, name: str, expected: str, value: Any, error: type[Exception] = ValueError) -> Exception:
    """One wording for every refused argument: the env, the argument, the rule, the value."""
    return error(f"{owner}: {name} must be {expected}, got {value!r}")


class Rule:
    """What one config field accepts.  ``check`` returns the value as the env keeps it (a numpy
    integer becomes an ``int``) or raises :func:`arg_error`: ``TypeError`` for a value of the
    wrong kind, ``ValueError`` for one out of range.  ``checked`` holds the fields declared
    before this one, already checked, so a bound may name one of them (Countdown's
    ``max_count`` starts at ``min_count``)."""

    def check(self, owner: str, name: str, value: Any, checked: Mapping[str, Any]) -> Any:
        raise NotImplementedError


def _bound(bound: int | float | str | None, checked: Mapping[str, Any]) -> Any:
    return checked[bound] if isinstance(bound, str) else bound


@dataclasses.dataclass(frozen=True)
class IntIn(Rule):
    """An int (or numpy integer, never a bool) in ``low..high``; ``high=None``: no upper bound.
    A bound given as a str is the value of that (earlier) field."""

    low: int | str
    high: int | str | None = None

    def check(self, owner: str, name: str, value: Any, checked: Mapping[str, Any]) -> int:
        low, high = _bound(self.low, checked), _bound(self.high, checked)
        expected = f"an int >= {low}" if high is None else f"an int in {low}..{high}"
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise arg_error(owner, name, expected, value, TypeError)
        if value < low or (high is not None and value > high):
            raise arg_error(owner, name, expected, value)
        return int(value)


@dataclasses.dataclass(frozen=True)
class RealIn(Rule):
    """A finite real number (not a bool) in ``[low, high]``, or ``(low, high]`` with ``low_open``."""

    low: float
    high: float
    low_open: bool = False

    def check(self, owner: str, name: str, value: Any, checked: Mapping[str, Any]) -> float:
        expected = f"a number in {'(' if self.low_open else '['}{self.low}, {self.high}]"
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise arg_error(owner, name, expected, value, TypeError)
        value = float(value)
        if not math.isfinite(value) or not self.low <= value <= self.high or (self.low_open and value == self.low):
            raise arg_error(owner, name, expected, value)
        return value


@dataclasses.dataclass(frozen=True)
class IsBool(Rule):
    """``True`` or ``False`` (numpy's too): ``1`` or ``"yes"`` are refused, never read as a flag."""

    def check(self, owner: str, name: str, value: Any, checked: Mapping[str, Any]) -> bool:
        if not isinstance(value, (bool, np.bool_)):
            raise arg_error(owner, name, "True or False", value, TypeError)
        return bool(value)


@dataclasses.dataclass(frozen=True)
class OneOf(Rule):
    """One of ``choices``, equal in type and value (``9.0`` is not the grid size ``9``)."""

    choices: Collection[Any]

    def check(self, owner: str, name: str, value: Any, checked: Mapping[str, Any]) -> Any:
        # Compared by type and value, so unhashable values are refused rather than crash.
        if not any(type(value) is type(choice) and value == choice for choice in self.choices):
            raise arg_error(owner, name, f"one of {sorted(self.choices, key=repr)}", value)
        return value


@dataclasses.dataclass(frozen=True)
class Text(Rule):
    """A non-empty printable ASCII str of at most ``max_chars``; with ``pattern``, it must also
    match it whole, ``pattern_says`` being how the error describes it."""

    max_chars: int
    pattern: str | None = None
    pattern_says: str = ""

    def check(self, owner: str, name: str, value: Any, checked: Mapping[str, Any]) -> str:
        expected = f"a non-empty printable ASCII str of at most {self.max_chars} characters"
        if not isinstance(value, str):
            raise arg_error(owner, name, expected, value, TypeError)
        if not value.strip() or len(value) > self.max_chars or not (value.isascii() and value.isprintable()):
            raise arg_error(owner, name, expected, value)
        if self.pattern is not None and not re.fullmatch(self.pattern, value):
            raise arg_error(owner, name, self.pattern_says, value)
        return value


@dataclasses.dataclass(frozen=True)
class OrNone(Rule):
    """``None`` (the argument left unset), or a value that keeps ``rule``."""

    rule: Rule

    def check(self, owner: str, name: str, value: Any, checked: Mapping[str, Any]) -> Any:
        return None if value is None else self.rule.check(owner, name, value, checked)


@dataclasses.dataclass(frozen=True)
class PathOrNone(Rule):
    """``None`` or a path (``str`` or ``os.PathLike``); whether it exists is the reader's check."""

    def check(self, owner: str, name: str, value: Any, checked: Mapping[str, Any]) -> str | os.PathLike[str] | None:
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise arg_error(owner, name, "a path or None", value, TypeError)
        return value


def setting(default: Any = dataclasses.MISSING, *, rule: Rule, help: str) -> Any:
    """A config field: its default, the rule its value keeps and what it means (TRL's
    ``metadata={"help": ...}``, which ``envs show`` and the docs can read)."""
    return dataclasses.field(default=default, metadata={"rule": rule, "help": help})


ConfigT = TypeVar("ConfigT", bound="EnvConfig")


@dataclasses.dataclass(frozen=True)
class EnvConfig:
    """Base of the families' config dataclasses; the one place constructor arguments are checked.

    A family subclasses it with one :func:`setting` per argument and, where arguments
    constrain each other, overrides :meth:`check_together`.  :meth:`from_kwargs` builds and
    validates a config from an env's keyword arguments; :meth:`validate` checks one built
    directly.  Both name ``owner`` (the env's class) in every error.
    """

    @classmethod
    def from_kwargs(cls: type[ConfigT], kwargs: Mapping[str, Any], owner: str | None = None) -> ConfigT:
        """The checked config of ``kwargs``: unknown or missing arguments are a ``TypeError``
        naming them and the known ones (as a wrong keyword to a plain ``__init__`` is)."""
        owner = owner or cls.__name__
        known = [field.name for field in dataclasses.fields(cls)]
        unknown = sorted(map(str, set(kwargs) - set(known)))
        if unknown:
            raise TypeError(f"{owner}: unknown arguments {unknown} (known: {', '.join(known)})")
        missing = [
            field.name
            for field in dataclasses.fields(cls)
            if field.name not in kwargs
            and field.default is dataclasses.MISSING
            and field.default_factory is dataclasses.MISSING
        ]
        if missing:
            raise TypeError(f"{owner}: missing required arguments {missing}")
        return cls(**kwargs).validate(owner)

    def validate(self: ConfigT, owner: str | None = None) -> ConfigT:
        """This config with every field checked by its rule (in declaration order), then
        :meth:`check_together`; the first broken rule raises."""
        owner = owner or type(self).__name__
        checked: dict[str, Any] = {}
        for field in dataclasses.fields(self):
            rule = field.metadata.get("rule")
            value = getattr(self, field.name)
            checked[field.name] = value if rule is None else rule.check(owner, field.name, value, checked)
        config = dataclasses.replace(self, **checked)
        config.check_together(owner)
        return config

    def check_together(self, owner: str) -> None:
        """Rules across fields (each field on its own is already checked); none by default."""

    def as_dict(self) -> dict[str, Any]:
        """The fields by name (shallow: values stay the objects given)."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}

    @classmethod
    def help(cls) -> dict[str, str]:
        """Each argument's help text, by name."""
        return {field.name: field.metadata.get("help", "") for field in dataclasses.fields(cls)}
