"""Code shape: no module under ragen_bench/ over 450 lines, no function or method over 80.

A module that size holds more than one job, and a function that long more than one step; both
are split into named pieces instead.  The few places still over a limit are listed below with
their size today.  The lists only shrink: an entry must still be over its limit (a fixed one is
removed from the list) and may not grow past the size written next to it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80
PACKAGE = REPO_ROOT / "ragen_bench"

# Modules over MAX_MODULE_LINES today, with their line count (a ceiling).
LONG_MODULES: dict[str, int] = {}

# Functions over MAX_FUNCTION_LINES today ("path::Class.method", nested ones as "outer.inner"), with
# their length in lines (a ceiling).
LONG_FUNCTIONS: dict[str, int] = {}


def module_lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def functions(source: str) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """``qualified name -> node`` of every function and method in ``source``, nested ones
    included (``Class.method``, ``outer.inner``)."""
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                found[name] = child
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)  # functions under if/try/with keep the enclosing prefix

    visit(ast.parse(source), "")
    return found


def function_lengths(source: str) -> dict[str, int]:
    """``qualified name -> lines`` (``end_lineno - lineno + 1``, decorators not counted) of every
    function and method in ``source``, nested ones included."""
    return {name: node.end_lineno - node.lineno + 1 for name, node in functions(source).items()}


def _over(sizes: dict[str, int], limit: int, allowed: dict[str, int]) -> list[str]:
    """What breaks the rule: an item over ``limit`` that is not allowed, or grew past its ceiling."""
    return sorted(f"{name}: {size} lines" for name, size in sizes.items()
                  if size > limit and size > allowed.get(name, limit))


def _stale(sizes: dict[str, int], limit: int, allowed: dict[str, int]) -> list[str]:
    """Allowed items that are gone or now within ``limit``: remove them from the list."""
    return sorted(name for name in allowed if sizes.get(name, 0) <= limit)


MODULES = sorted(PACKAGE.rglob("*.py"))


def _module_sizes() -> dict[str, int]:
    return {path.relative_to(REPO_ROOT).as_posix(): module_lines(path) for path in MODULES}


def _function_sizes() -> dict[str, int]:
    sizes = {}
    for path in MODULES:
        relative = path.relative_to(REPO_ROOT).as_posix()
        for name, size in function_lengths(path.read_text(encoding="utf-8")).items():
            sizes[f"{relative}::{name}"] = size
    return sizes


def test_no_module_is_over_the_limit():
    assert _over(_module_sizes(), MAX_MODULE_LINES, LONG_MODULES) == []


def test_no_function_is_over_the_limit():
    assert _over(_function_sizes(), MAX_FUNCTION_LINES, LONG_FUNCTIONS) == []


def test_the_allow_lists_only_name_items_still_over_the_limit():
    assert _stale(_module_sizes(), MAX_MODULE_LINES, LONG_MODULES) == []
    assert _stale(_function_sizes(), MAX_FUNCTION_LINES, LONG_FUNCTIONS) == []


# -- the checks themselves --------------------------------------------------------------------


def test_function_lengths_count_methods_nested_and_async_functions():
    source = (
        "def f():\n"
        "    def inner():\n"
        "        pass\n"
        "    return inner\n"
        "class C:\n"
        "    @property\n"
        "    def p(self):\n"
        "        return 1\n"
        "    if True:\n"
        "        async def a(self):\n"
        "            pass\n"
    )
    assert function_lengths(source) == {"f": 4, "f.inner": 2, "C.p": 2, "C.a": 2}


@pytest.mark.parametrize(
    ("sizes", "allowed", "over", "stale"),
    [
        ({"a": 81}, {}, ["a: 81 lines"], []),  # over and not listed
        ({"a": 81}, {"a": 81}, [], []),  # listed at its size
        ({"a": 82}, {"a": 81}, ["a: 82 lines"], []),  # grew past its ceiling
        ({"a": 80}, {"a": 81}, [], ["a"]),  # fixed: must leave the list
        ({}, {"a": 81}, [], ["a"]),  # gone: must leave the list
    ],
)
def test_the_lists_only_shrink(sizes, allowed, over, stale):
    assert _over(sizes, 80, allowed) == over
    assert _stale(sizes, 80, allowed) == stale
