"""The repository's ``tests`` package and veRL's top-level ``tests`` package never meet.

veRL's wheel installs ``tests`` (and ``scripts``) at the top of site-packages.  The veRL-side
tests live in the package ``tests_verl`` and import neither; run from the checkout (as
scripts/setup_verl_venv.sh does), the name ``tests`` still means the repository's own.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def test_verls_wheel_really_ships_a_top_level_tests_package():
    shipped = {str(path) for path in importlib.metadata.files("verl") or ()}
    assert "tests/__init__.py" in shipped  # the hazard this folder's name avoids


def test_the_name_tests_resolves_to_the_repository_here():
    assert Path(importlib.util.find_spec("tests").origin).resolve() == REPO / "tests" / "__init__.py"


def test_no_veRL_side_test_imports_a_tests_package():
    for path in sorted(HERE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            assert not [n for n in names if n == "tests" or n.startswith("tests.")], path.name
