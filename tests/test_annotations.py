"""Return types: no function under ragen_bench/ returns ``Any`` where a precise type exists.

A value of a lazily imported library (a tensor, a model, a figure) is named through an
``if TYPE_CHECKING:`` import instead.  The functions whose value really is arbitrary are
listed below, each with why.  The list only shrinks: an entry must still return ``Any``
(one given a precise type leaves the list), and a new ``-> Any`` must be added with its reason.
"""

from __future__ import annotations

import ast

import pytest

from tests.conftest import REPO_ROOT
from tests.test_code_shape import functions

PACKAGE = REPO_ROOT / "ragen_bench"

_JSON = "a JSON value"
_CONFIG_VALUE = "a config value of whatever type its rule or hint accepts"
_LITERAL = "a parsed literal: nested lists and tuples of ints and strs"

# "path::Class.method" (nested functions as "outer.inner") -> why it returns Any.
RETURNS_ANY = {
    "ragen_bench/chat/trajectory.py::pack_text": _JSON,
    "ragen_bench/chat/trajectory.py::unpack_text": _JSON,
    "ragen_bench/envs/config.py::Rule.check": _CONFIG_VALUE,
    "ragen_bench/envs/config.py::_bound": "a literal bound or an earlier field's value, compared as the rule needs",
    "ragen_bench/envs/config.py::OneOf.check": "one of a family's choices, of any type",
    "ragen_bench/envs/config.py::OrNone.check": _CONFIG_VALUE,
    "ragen_bench/envs/config.py::setting": "Any like dataclasses.field, so `x: int = setting()` checks",
    "ragen_bench/envs/reasoning_gym/grading.py::read_literal": _LITERAL,
    "ragen_bench/envs/reasoning_gym/grading.py::_literal": _LITERAL,
    "ragen_bench/leaderboard/files.py::parse_json": _JSON,
    "ragen_bench/leaderboard/files.py::read_json_file": _JSON,
    "ragen_bench/values.py::conform": _CONFIG_VALUE,
    "ragen_bench/values.py::_element": _CONFIG_VALUE,
    "ragen_bench/values.py::documented": "Any like dataclasses.field, so `x: int = documented(...)` checks",
    "ragen_bench/eval/rundir.py::read_json": _JSON,
    "ragen_bench/train/config.py::_coerce": _CONFIG_VALUE,
}

# How a bare Any return is spelled: the name, through the module, or as a string.
_ANY_SPELLINGS = {"Any", "typing.Any", "'Any'", "'typing.Any'"}


def any_returns(source: str) -> list[str]:
    """Qualified names (``Class.method``, ``outer.inner``) of the functions in ``source`` annotated ``-> Any``."""
    return [name for name, node in functions(source).items()
            if node.returns is not None and ast.unparse(node.returns) in _ANY_SPELLINGS]


def _package_any_returns() -> set[str]:
    return {
        f"{path.relative_to(REPO_ROOT).as_posix()}::{name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for name in any_returns(path.read_text(encoding="utf-8"))
    }


def test_no_function_returns_any_unless_listed():
    assert sorted(_package_any_returns() - RETURNS_ANY.keys()) == []


def test_the_list_only_names_functions_still_returning_any():
    assert sorted(RETURNS_ANY.keys() - _package_any_returns()) == []


def test_every_listed_function_says_why_in_one_line():
    assert [name for name, reason in RETURNS_ANY.items() if not reason.strip() or "\n" in reason] == []


# -- the check itself ------------------------------------------------------------------------


def test_any_returns_finds_functions_methods_nested_and_async_ones():
    source = (
        "import typing\n"
        "def f() -> Any:\n"
        "    def inner() -> typing.Any:\n"
        "        pass\n"
        "class C:\n"
        "    if True:\n"
        "        async def a(self) -> 'Any':\n"
        "            pass\n"
    )
    assert any_returns(source) == ["f", "f.inner", "C.a"]


@pytest.mark.parametrize(
    "annotation", ["Any | None", "list[Any]", "torch.Tensor", "None", "NoReturn", "'torch.Tensor'"]
)
def test_any_returns_ignores_a_precise_or_partly_any_return(annotation):
    assert any_returns(f"def f(x: Any) -> {annotation}:\n    pass\n") == []


def test_any_returns_ignores_a_function_without_a_return_annotation():
    assert any_returns("def f():\n    pass\n") == []
