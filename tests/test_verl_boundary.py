"""veRL stays behind one door: only ``ragen_bench/integrations/verl/`` may import it.

veRL pins its own transformers and installs top-level ``tests``/``scripts`` packages, so it
lives in its own virtualenv (scripts/setup_verl_venv.sh); any other module that imported it
would break the main install.  Imports are found at any depth of a file, including
``importlib.import_module("verl...")`` and ``__import__("verl")`` with a literal name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "ragen_bench"
ALLOWED = PACKAGE / "integrations" / "verl"
MAIN_TESTS = REPO_ROOT / "tests"


def _is_verl(name: str) -> bool:
    return name == "verl" or name.startswith("verl.")


def verl_imports(source: str) -> list[str]:
    """The verl modules a source text imports (statements and literal dynamic imports)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if _is_verl(alias.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and _is_verl(node.module):
            found.append(node.module)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            target = node.args[0].value
            if called in ("import_module", "__import__", "importorskip") and isinstance(target, str) and _is_verl(target):
                found.append(target)
    return found


def _python_files(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*.py") if "__pycache__" not in path.parts)


@pytest.mark.parametrize(
    "path",
    [p for p in _python_files(PACKAGE) if ALLOWED not in p.parents] + _python_files(MAIN_TESTS),
    ids=lambda p: p.relative_to(REPO_ROOT).as_posix(),
)
def test_only_the_verl_integration_imports_verl(path):
    assert verl_imports(path.read_text(encoding="utf-8")) == [], f"{path.relative_to(REPO_ROOT)} imports verl"


@pytest.mark.parametrize(
    "source, expected",
    [
        ("import verl", ["verl"]),
        ("import os, verl.trainer.ppo.core_algos as ca", ["verl.trainer.ppo.core_algos"]),
        ("def f():\n    from verl.protocol import DataProto", ["verl.protocol"]),
        ("import importlib\nimportlib.import_module('verl.utils')", ["verl.utils"]),
        ("__import__('verl')", ["verl"]),
        ("pytest.importorskip('verl.trainer')", ["verl.trainer"]),
        # Near misses: other packages whose names start with the same letters, and relative imports.
        ("import verlib\nfrom verl_tools import x\nfrom .verl import y", []),
        ("print('verl')\nimport_module(name)", []),
    ],
)
def test_the_check_finds_every_form_of_import(source, expected):
    assert verl_imports(source) == expected
