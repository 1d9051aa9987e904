"""Config values checked against their declared types: the one rule ``eval`` and ``train`` share.

A config value from Hydra (or JSON) is a bool, int, float, str, None, list or mapping; a
dataclass field declares which it may be.  :func:`conform` checks a value against such a
type hint and returns it in the declared form, or raises :class:`Mismatch` saying what was
expected; the caller names the key in its own error.  The rules:

* ``int``: an int, never a bool (``limit=true`` is a mistake, not the number 1);
* ``float``: a finite int or float (an int becomes a float; ``nan`` and ``inf`` are refused);
* ``bool``, ``str``: exactly that type;
* ``None``: only ``None``; ``X | Y``: the first arm the value fits;
* ``list[X]``: a list whose every element fits ``X`` (a bad element is named by its index);
* ``dict[...]``: any mapping, copied into a dict (its values are the owner's to check).

Used by ``ragen_bench.eval.config`` and ``ragen_bench.train.config`` (each config field),
and by ``ragen_bench.chat.config.check_chat`` (the ``chat.*`` settings of both).
:func:`documented` declares such a field with its default and what it means.

:func:`unknown_name` is the one way a name that is not there is refused (env ids, games).

This module imports nothing of ``ragen_bench``.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any


class Mismatch(ValueError):
    """``value`` does not fit its declared type: ``expected`` says what would (``"int or null"``).

    ``where`` is ``""`` for the value itself, or the path below it to the element that does
    not fit (``"[1]"``), for the caller to append to the key.
    """

    def __init__(self, expected: str, value: Any, where: str = "") -> None:
        super().__init__(f"{where or 'value'}: expected {expected}, got {value!r}")
        self.expected, self.value, self.where = expected, value, where


def documented(default: Any = None, *, factory: Callable[[], object] | None = None, help: str) -> Any:
    """A config dataclass field with its default (``factory`` for a list or a section) and what it means, where it is
    defined: TRL's ``field(metadata={"help": ...})``, which ``ragen-bench train --help`` and ``--dry-run`` print."""
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata={"help": help})
    return dataclasses.field(default=default, metadata={"help": help})


def is_int(value: Any) -> bool:
    """An int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def _arms(hint: Any) -> tuple[Any, ...]:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return typing.get_args(hint)
    return (hint,)


def type_name(hint: Any) -> str:
    """``int | None`` -> ``"int or null"``; ``list[str]`` -> ``"list"``."""
    return " or ".join(
        "null" if arm is type(None) else getattr(typing.get_origin(arm) or arm, "__name__", str(arm))
        for arm in _arms(hint)
    )


def conform(value: Any, hint: Any) -> Any:
    """``value`` in the form ``hint`` declares (see the module docstring), or :class:`Mismatch`."""
    for arm in _arms(hint):
        origin = typing.get_origin(arm) or arm
        if arm is type(None):
            if value is None:
                return None
        elif origin is float:
            if is_int(value) or isinstance(value, float):
                if not math.isfinite(value):
                    raise Mismatch("a finite number", value)
                return float(value)
        elif origin is int:
            if is_int(value):
                return value
        elif origin in (str, bool):
            if type(value) is origin:
                return value
        elif origin is list:
            if isinstance(value, list):
                (item,) = typing.get_args(arm) or (Any,)
                return [_element(entry, item, f"[{index}]") for index, entry in enumerate(value)]
        elif origin is dict:
            if isinstance(value, Mapping):
                return dict(value)
        elif arm is Any or (isinstance(origin, type) and isinstance(value, origin)):
            return value
    raise Mismatch(type_name(hint), value)


def _element(value: Any, hint: Any, where: str) -> Any:
    if hint is Any:
        return value
    try:
        return conform(value, hint)
    except Mismatch as mismatch:
        raise Mismatch(mismatch.expected, mismatch.value, where + mismatch.where) from None


def fits(value: Any, hint: Any) -> bool:
    """Whether :func:`conform` accepts ``value`` for ``hint``."""
    try:
        conform(value, hint)
    except Mismatch:
        return False
    return True


def unknown_name(kind: str, name: object, known: Sequence[str], listing: str) -> str:
    """The line refusing an unknown ``name``: the closest known names and where all are listed.

    Never the whole list: 145 ids on one line hide the answer.  ``listing`` says where to look
    (``"`ragen-bench envs list`"``).
    """
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6) if isinstance(name, str) else []
    options = ", ".join(close[:-1]) + " or " + close[-1] if len(close) > 1 else "".join(close)
    hint = f"did you mean {options}? " if close else ""
    return f"unknown {kind} {name!r}; {hint}{listing} shows all {len(known)}"
