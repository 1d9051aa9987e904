"""Families from other packages: the ``ragen_bench.envs`` entry-point group (plugins.py).

The good case runs in a fresh interpreter with ``tests/plugin_pkg`` on ``sys.path``: its
dist-info declares the entry point, so discovery is importlib.metadata's own, with no install.
The bad cases give :func:`plugins.plugin_rows` entry points built here, pointing at modules
written into ``tmp_path``; nothing is registered with Gymnasium in this process.
"""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest

from ragen_bench import plugins, registry

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_PKG = ROOT / "tests" / "plugin_pkg"
DEMO_ID = "demo/CoinGuess-v0"


def _python(code: str, *paths: Path) -> subprocess.CompletedProcess[str]:
    """``code`` run by a fresh interpreter with ``paths`` first on ``sys.path`` (via PYTHONPATH)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, paths))}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)


def test_an_installed_plugin_is_registered_made_stepped_and_listed_without_importing_its_env():
    result = _python(
        f"""
        import json, sys, warnings
        warnings.simplefilter("error")  # the good plugin gives no warning at all
        import gymnasium, ragen_bench
        from ragen_bench import catalog
        lazy = "ragen_demo_plugin.env" not in sys.modules
        env = gymnasium.make("{DEMO_ID}")
        observation, info = env.reset(seed=3)
        step = env.step(env.unwrapped.optimal_action())
        print(json.dumps(dict(
            lazy=lazy, observation=observation, info=info, step=step[:4],
            listed=[row["id"] for row in catalog.env_rows()],
            families=[row["family"] for row in catalog.family_rows()],
        )))
        """,
        PLUGIN_PKG,
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["lazy"], "import ragen_bench imported the plugin's env module"
    assert seen["observation"] == "Which face is up?" and seen["info"] == {"success": False, "level_seed": 3}
    assert seen["step"] == ["Right.", 1.0, True, False]  # seed 3 on two sides: tails, the optimal guess
    assert DEMO_ID in seen["listed"] and "RAGEN/Sokoban-6x6-v0" in seen["listed"]
    assert "demo_coin" in seen["families"]


def test_the_cli_lists_and_shows_a_plugin_id():
    result = _python(
        """
        import sys
        from ragen_bench.cli import main
        sys.argv = ["ragen-bench", "envs", "list"]
        main()
        sys.argv = ["ragen-bench", "envs", "show", "demo/CoinGuess-v0", "--seed", "4"]
        main()
        """,
        PLUGIN_PKG,
    )
    assert result.returncode == 0, result.stderr
    assert "demo/CoinGuess-v0" in result.stdout and "Guess which face a seeded coin shows." in result.stdout
    assert "actions: heads, tails" in result.stdout


def test_a_plugin_refuses_bad_arguments_through_the_same_config_check():
    result = _python(
        """
        import gymnasium, ragen_bench
        for kwargs in (dict(sides=4), dict(sides="2"), dict(colour="red")):
            try:
                gymnasium.make("demo/CoinGuess-v0", **kwargs)
            except (TypeError, ValueError) as error:
                print(type(error).__name__, error)
        """,
        PLUGIN_PKG,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # (Gymnasium's make appends to a TypeError's message which id and kwargs raised it.)
    expected = [
        "ValueError CoinGuessEnv: sides must be an int in 2..3, got 4",
        "TypeError CoinGuessEnv: sides must be an int in 2..3, got '2'",
        "TypeError CoinGuessEnv: unknown arguments ['colour'] (known: sides)",
    ]
    assert len(lines) == len(expected) and all(line.startswith(want) for line, want in zip(lines, expected)), lines


# -- bad plugins ---------------------------------------------------------------------------

BAD_MODULE = '''
from ragen_bench.registry import EnvEntry

def row(env_id, entry_point="ragen_demo_plugin.env:CoinGuessEnv", **extra):
    return EnvEntry(env_id, "bad", entry_point, **extra)

def explode():
    raise RuntimeError("boom")

GOOD = [row("bad/Fine-v0")]
OUTSIDE = [row("other/Stray-v0")]
OWN = [row("RAGEN/Sokoban-6x6-v0")]
TWICE = [row("bad/Twice-v0"), row("bad/Twice-v0")]
NO_VERSION = [row("bad/Forever")]
CLASS_OBJECT = [row("bad/Eager-v0", entry_point=EnvEntry)]
NOT_ROWS = [{"id": "bad/Dict-v0"}]
TEXT = "bad/Text-v0"
'''


@pytest.fixture
def bad_module(tmp_path, monkeypatch):
    (tmp_path / "ragen_bad_plugin.py").write_text(BAD_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "ragen_bad_plugin"
    sys.modules.pop("ragen_bad_plugin", None)


def _point(name: str, value: str) -> metadata.EntryPoint:
    return metadata.EntryPoint(name=name, value=value, group=plugins.PLUGIN_GROUP)


@pytest.mark.parametrize(
    "name, attr, why",
    [
        ("bad", "explode", "RuntimeError: boom"),
        ("bad", "MISSING", "AttributeError"),
        ("bad", "OUTSIDE", "'other/Stray-v0' is outside its namespace 'bad'/"),
        ("RAGEN", "OWN", "the namespace 'RAGEN' is ragen-bench's own"),
        ("bad", "TWICE", "'bad/Twice-v0' is already registered"),
        ("bad", "NO_VERSION", "'bad/Forever' has no version suffix"),
        ("bad", "CLASS_OBJECT", "entry_point must be a 'module:Class' string"),
        ("bad", "NOT_ROWS", "a row is a dict, not a ragen_bench.registry.EnvEntry"),
        ("bad", "TEXT", "gave a str, not a list of EnvEntry rows"),
    ],
)
def test_a_bad_plugin_is_skipped_whole_with_one_line_naming_it(bad_module, name, attr, why):
    rows, problems = plugins.plugin_rows([_point(name, f"{bad_module}:{attr}")], taken=registry.ENV_IDS)
    assert rows == []
    assert len(problems) == 1 and "\n" not in problems[0]
    assert problems[0].startswith(f"ragen-bench: plugin {name!r} ({bad_module}:{attr}) skipped: ")
    assert why in problems[0]


def test_an_id_someone_else_registered_is_refused_and_good_plugins_still_load(bad_module):
    points = [_point("bad", f"{bad_module}:GOOD"), _point("bad", f"{bad_module}:GOOD"), _point("late", f"{bad_module}:explode")]
    rows, problems = plugins.plugin_rows(points, taken={"bad/Other-v0"})
    assert [row.id for row in rows] == ["bad/Fine-v0"]
    assert "the namespace 'bad' is already another plugin's" in problems[0]
    assert "RuntimeError: boom" in problems[1]
    _, problems = plugins.plugin_rows([_point("bad", f"{bad_module}:GOOD")], taken={"bad/Fine-v0"})
    assert "'bad/Fine-v0' is already registered" in problems[0]


def test_import_ragen_bench_survives_a_broken_plugin_with_one_warning(tmp_path):
    # A second installed distribution whose entry point raises on load.
    (tmp_path / "ragen_broken_plugin.py").write_text("raise ImportError('a dependency is missing')\n")
    info = tmp_path / "ragen_broken_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ragen-broken-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[ragen_bench.envs]\nbroken = ragen_broken_plugin:entries\n")
    result = _python(
        """
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import gymnasium, ragen_bench
            ragen_bench.register_all()  # a second registration tries no plugin again
        from ragen_bench.plugins import PluginWarning
        print([str(w.message) for w in caught if issubclass(w.category, PluginWarning)])
        gymnasium.make("demo/CoinGuess-v0").reset(seed=0)
        gymnasium.make("RAGEN/Bandit-v0").reset(seed=0)
        """,
        PLUGIN_PKG,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str([
        "ragen-bench: plugin 'broken' (ragen_broken_plugin:entries from ragen-broken-plugin 1.0) skipped: "
        "ImportError: a dependency is missing"
    ])


def test_without_plugins_the_id_table_is_the_projects_own():
    # The test process has no plugin installed: every registered row is the project's.
    assert registry.all_entries()[: len(registry.ENTRIES)] == registry.ENTRIES
    assert all(not row.id.startswith("demo/") for row in registry.all_entries())


def _doc_snippets() -> list[tuple[str, str]]:
    """``(path, code)`` of each code block in architecture.md's env-family section marked
    ``<!-- from PATH -->``."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Where a new env family goes", 1)[1].split("\n## ", 1)[0]
    pattern = re.compile(r"<!-- from (\S+) -->\n```\w*\n(.*?)```", re.S)
    return pattern.findall(section)


def test_the_architecture_pages_worked_example_is_the_test_plugins_code():
    snippets = _doc_snippets()
    assert {path for path, _ in snippets} == {
        "tests/plugin_pkg/ragen_demo_plugin/env.py",
        "tests/plugin_pkg/ragen_demo_plugin/rows.py",
        "tests/plugin_pkg/ragen_demo_plugin-0.1.0.dist-info/entry_points.txt",
    }
    for path, code in snippets:
        assert code in (ROOT / path).read_text(), f"docs/architecture.md's snippet of {path} is no longer its code"
