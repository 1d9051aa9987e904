"""Arrows between packages run one way (DESIGN.md): a module imports only from its own
layer or the layers below it, at module level and inside functions alike; and no modules
import each other in a circle, within a layer either."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import REPO_ROOT

# Bottom to top.  runfiles (atomic writes, config comparison), values (config value types) and
# plots (free text in matplotlib labels) import nothing of the project; nor does sandbox (untrusted code in
# a separate process), which the envs that run a model's code call.
# plugins (the entry-point loader and register_all) sits on the id table (registry).
# catalog (what `ragen-bench envs` prints) reads the registries, games and panels and plays nothing.
# Envs know nothing of chat, agents or training; the chat layer (which owns the agent
# protocol) knows nothing of agents; evaluation sits above all of them, and the trainer
# above evaluation (it validates with the real harness).
LAYERS = (
    "runfiles",
    "values",
    "plots",
    "sandbox",
    "data",
    "cache",
    "registry",
    "plugins",
    "envs",
    "games",
    "panels",
    "suites",
    "catalog",
    "chat",
    "agents",
    "starpo",
    "eval",
    "render_writers",
    "render",
    "play",
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


# -- no circles ------------------------------------------------------------------------------


def _module_name(path) -> str:
    """``ragen_bench/chat/__init__.py`` -> ``ragen_bench.chat``; ``.../chat/config.py`` -> ``ragen_bench.chat.config``."""
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


ALL_MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _targets(name: str, modules) -> set[str]:
    """The modules an imported name loads: ``from ragen_bench.chat import ChatConfig`` is
    ``ragen_bench.chat``; ``from ragen_bench import suites`` is ``ragen_bench.suites``."""
    while name not in modules and "." in name:
        name = name.rpartition(".")[0]
    return {name} if name in modules else set()


def import_graph(modules) -> dict[str, set[str]]:
    """``module -> the ragen_bench modules it imports``, at any depth of the file (a function's
    lazy import closes a circle at call time just as well)."""
    graph = {}
    for name, path in modules.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    edges |= _targets(alias.name, modules)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    edges |= {full} if full in modules else _targets(node.module, modules)
        graph[name] = edges - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The circles of ``graph``: its strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_in_a_circle():
    assert cycles(import_graph(ALL_MODULES)) == []


def test_the_circle_check_finds_circles(tmp_path):
    for name, text in {"a": "import pkg.b\n", "b": "def f():\n    from pkg.c import x\n", "c": "from pkg import a\n",
                       "d": "import pkg.a\n"}.items():
        (tmp_path / f"{name}.py").write_text(text)
    modules = {f"pkg.{name}": tmp_path / f"{name}.py" for name in "abcd"}
    modules["pkg"] = tmp_path / "__init__.py"
    modules["pkg"].write_text("")
    graph = import_graph(modules)
    assert graph["pkg.c"] == {"pkg.a"} and graph["pkg.b"] == {"pkg.c"}
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]
    assert cycles({"x": {"y"}, "y": set()}) == []
