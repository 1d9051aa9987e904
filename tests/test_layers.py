"""Arrows between packages run one way (DESIGN.md): a module imports only from its own
layer or the layers below it, at module level and inside functions alike."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import REPO_ROOT

# Bottom to top.  runfiles (atomic writes, config comparison) imports nothing of the project.
# Envs know nothing of chat, agents or training; the chat layer (which owns the agent
# protocol) knows nothing of agents; evaluation sits above all of them, and the trainer
# above evaluation (it validates with the real harness).
LAYERS = (
    "runfiles",
    "data",
    "cache",
    "registry",
    "envs",
    "games",
    "panels",
    "suites",
    "chat",
    "agents",
    "starpo",
    "eval",
    "train",
    "leaderboard",
    "integrations",
    "cli",
)
PACKAGE = REPO_ROOT / "ragen_bench"
MODULES = sorted(path for path in PACKAGE.rglob("*.py") if path.relative_to(PACKAGE).parts[0] != "__init__.py")


def _layer(dotted: str) -> str:
    """``ragen_bench.envs.sokoban.env`` -> ``envs``."""
    return dotted.split(".")[1]


def _imports(path) -> set[str]:
    """Every ``ragen_bench.*`` module a file imports, at any depth of the file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("ragen_bench."))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "ragen_bench":
                found.update(f"ragen_bench.{alias.name}" for alias in node.names)
            elif node.module.startswith("ragen_bench."):
                found.add(node.module)
    return found


def test_every_package_has_a_layer():
    packages = {path.relative_to(PACKAGE).parts[0].removesuffix(".py") for path in MODULES}
    assert packages <= set(LAYERS), packages - set(LAYERS)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_imports_point_down(path):
    own = LAYERS.index(path.relative_to(PACKAGE).parts[0].removesuffix(".py"))
    upward = sorted(name for name in _imports(path) if _layer(name) in LAYERS and LAYERS.index(_layer(name)) > own)
    assert upward == [], f"{path.relative_to(REPO_ROOT)} imports from a higher layer: {upward}"


def test_the_check_sees_imports_inside_functions(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from ragen_bench.agents import make_agent\n    import ragen_bench.eval.run\n")
    assert _imports(module) == {"ragen_bench.agents", "ragen_bench.eval.run"}
