"""docs/architecture.md kept true: its four worked examples run as written, every path and
``ragen_bench.`` module it names exists, every module under ``ragen_bench/`` is named on it, and
its layer rows are in tests/test_layers.py's order.

The examples are the page's code blocks marked ``<!-- example: NAME -->``.  Each runs in a
temporary folder; the tables an example adds to (``AGENT_FACTORIES``, ``ESTIMATORS``,
``MAIN_COLUMNS``, ``sys.modules``, the config module ``compose_config`` reads) are monkeypatched,
so every one is as it was after the test.  The env family runs in a fresh interpreter, as an
installed distribution would (its dist-info declares the entry point), so nothing is registered
with Gymnasium in this process.
"""

from __future__ import annotations

import ast
import csv
import html
import importlib.util
import inspect
import io
import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

import ragen_bench.data
from ragen_bench.agents import AGENT_FACTORIES, make_agent
from ragen_bench.chat.protocol import AgentError
from ragen_bench.data import configs_root
from ragen_bench.eval import compose_config, rundir, run_eval
from ragen_bench.starpo import algorithms

from tests.conftest import REPO_ROOT
from tests.test_layers import LAYERS

DOC = REPO_ROOT / "docs" / "architecture.md"
PACKAGE = REPO_ROOT / "ragen_bench"
EXAMPLE_NAMES = {
    "env/parity.py", "env/rows.py", "env/pyproject.toml",
    "agent/constant.py", "agent/factories", "agent/constant.yaml",
    "estimator/function", "estimator/entry",
    "column/entry",
}


def examples() -> dict[str, str]:
    """Each ``<!-- example: NAME -->`` block of the page, by name."""
    found = re.findall(r"<!-- example: (\S+) -->\n```\w+\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    names = [name for name, _ in found]
    assert len(names) == len(set(names)), f"an example name is used twice: {names}"
    return dict(found)


def table_line(block: str) -> tuple[str, str]:
    """The one ``"key": "value",`` line of a dict that an example adds."""
    (item,) = ast.literal_eval("{" + block + "}").items()
    return item


def test_the_page_holds_the_four_examples():
    assert set(examples()) == EXAMPLE_NAMES


# -- 1. an env family, registered through the ragen_bench.envs entry point ---------------------------


def test_example_1_the_env_family_is_registered_made_reset_and_stepped(tmp_path):
    blocks = examples()
    package = tmp_path / "mylab_envs"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in ("parity.py", "rows.py"):
        (package / name).write_text(blocks[f"env/{name}"])
    points = tomllib.loads(blocks["env/pyproject.toml"])["project"]["entry-points"]["ragen_bench.envs"]
    # What pip writes when it installs the distribution: importlib.metadata finds the entry point here.
    info = tmp_path / "mylab_envs-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mylab-envs\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[ragen_bench.envs]\n" + "".join(f"{name} = {value}\n" for name, value in points.items()))
    code = textwrap.dedent("""
        import json, sys, warnings
        warnings.simplefilter("error")  # a plugin that is skipped warns: here that fails
        import gymnasium, ragen_bench
        from ragen_bench import catalog
        lazy = "mylab_envs.parity" not in sys.modules
        env = gymnasium.make("mylab/Parity-v0")
        first = env.reset(seed=7)
        optimal = env.unwrapped.optimal_action()
        right = env.step(1)
        second = env.reset(seed=8)
        wrong = env.step(1)
        try:
            gymnasium.make("mylab/Parity-v0", top=0)
            refused = None
        except ValueError as error:
            refused = str(error)
        listed = [row["id"] for row in catalog.env_rows()]
        print(json.dumps(dict(lazy=lazy, first=first, optimal=optimal, right=right[:4], second=second[0],
                              wrong=wrong[:4], refused=refused, listed=listed)))
    """)
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO_ROOT)])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ, cwd=tmp_path,
                          timeout=180)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["lazy"], "import ragen_bench imported the env module, not only the rows"
    assert seen["first"] == ["The number is 7.", {"success": False, "level_seed": 7}]
    assert seen["optimal"] == 1
    assert seen["right"] == ["Right.", 1.0, True, False]
    assert seen["second"] == "The number is 8."
    assert seen["wrong"] == ["Wrong.", 0.0, True, False]
    assert seen["refused"].startswith("ParityEnv: top must be an int in 1..999, got 0")
    assert "mylab/Parity-v0" in seen["listed"]


# -- 2. an agent: its module, its AGENT_FACTORIES line, its configs/agent yaml -------------------------


def _copy_tree(source, target: Path) -> None:
    """A resource folder (a ``Traversable``, not always a path) copied into ``target``."""
    target.mkdir()
    for item in source.iterdir():
        if item.is_dir():
            _copy_tree(item, target / item.name)
        else:
            (target / item.name).write_bytes(item.read_bytes())


@pytest.fixture
def own_configs(tmp_path, monkeypatch):
    """A copy of the packaged configs, importable as a package of its own, which ``compose_config``
    reads instead of ``ragen_bench.data.configs``; yields its folder.  The project's configs are
    never written."""
    name = "ragen_example_configs"
    folder = tmp_path / "configs_package" / name
    folder.parent.mkdir()
    _copy_tree(configs_root(), folder)
    (folder / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(folder.parent))
    monkeypatch.setattr(ragen_bench.data, "CONFIG_MODULE", name)
    yield folder
    for module in [module for module in sys.modules if module == name or module.startswith(name + ".")]:
        del sys.modules[module]


def test_example_2_the_agent_plays_an_eval_episode(tmp_path, monkeypatch, own_configs):
    blocks = examples()
    key, target = table_line(blocks["agent/factories"])
    module_name, _, factory_name = target.partition(":")
    # The module the line names, loaded from the page's block (the package's own files are left alone).
    (tmp_path / "agent.py").write_text(blocks["agent/constant.py"])
    spec = importlib.util.spec_from_file_location(module_name, tmp_path / "agent.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, module_name, module)
    spec.loader.exec_module(module)
    monkeypatch.setitem(AGENT_FACTORIES, key, target)
    (own_configs / "agent" / f"{key}.yaml").write_text(blocks["agent/constant.yaml"])

    out = tmp_path / "run"
    config = compose_config("eval", ["env=RAGEN/Sokoban-6x6-v0", f"agent={key}", "limit=1", f"out={out}",
                                     "progress=false"])
    settings = dict(config["agent"])
    assert settings.pop("name") == key
    parameters = inspect.signature(getattr(module, factory_name)).parameters
    assert settings == {name: parameters[name].default for name in settings} == {"action": "Up", "think": True}

    result = run_eval(config)
    assert result.complete and result.new_episodes == 1
    (record,) = [json.loads(line) for line in (out / rundir.EPISODES).read_text().splitlines()]
    assert record["turns"] and all(turn["parsed_actions"] == ["Up"] for turn in record["turns"])
    assert json.loads((out / "summary.json").read_text())["groups"][0]["episodes"] == 1

    # Settings are the factory's keywords: another action is taken, a misspelt one refused by name.
    again = compose_config("eval", ["env=RAGEN/Sokoban-6x6-v0", f"agent={key}", "agent.action=Left"])
    assert make_agent(key, **{k: v for k, v in again["agent"].items() if k != "name"}).action == "Left"
    with pytest.raises(AgentError, match=r"agent 'constant': unknown setting 'acton' \(did you mean 'action'\?\)"):
        make_agent(key, acton="Left")


# -- 3. an advantage estimator: one entry in starpo/algorithms.py ---------------------------------


def test_example_3_the_estimator_is_listed_accepted_shown_and_computed(tmp_path, monkeypatch, capsys):
    torch = pytest.importorskip("torch")
    from ragen_bench.cli import main
    from ragen_bench.integrations.verl import recipe
    from ragen_bench.train import config as train_config

    blocks = examples()
    namespace = dict(vars(algorithms))  # the function is written inside starpo/algorithms.py
    exec(blocks["estimator/function"], namespace)
    entry = eval(blocks["estimator/entry"].strip().removesuffix(","), namespace)
    monkeypatch.setitem(algorithms.ESTIMATORS, entry.name, entry)

    assert "reinforce" in algorithms.choices(algorithms.ESTIMATORS).split(", ")
    config = train_config.from_preset("grpo", ["advantage.estimator=reinforce"])
    assert config.advantage.estimator == "reinforce" and not config.uses_critic

    monkeypatch.chdir(tmp_path)
    assert main(["train", "preset=grpo", "advantage.estimator=reinforce", "--dry-run"]) == 0
    assert "advantage reinforce (row total, no baseline), critic off" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []  # a dry run writes nothing

    rewards = torch.tensor([[0.0, 0.0, 1.0], [0.0, 2.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    settings = replace(train_config.AdvantageConfig(), estimator="reinforce")
    advantages, returns = algorithms.compute_advantages(settings, rewards, None, mask, [0, 1])
    assert advantages.tolist() == returns.tolist() == [[1.0, 1.0, 1.0], [2.0, 2.0, 0.0]]

    with pytest.raises(recipe.RecipeError, match=r"veRL has no estimator for 'reinforce'"):
        recipe.verl_overrides(config)


# -- 4. a leaderboard column: one line in MAIN_COLUMNS ---------------------------------------------


def test_example_4_the_column_appears_in_the_built_leaderboard(tmp_path, monkeypatch):
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    from ragen_bench.leaderboard import tables
    from ragen_bench.leaderboard.build import build
    from ragen_bench.leaderboard.schema import FORMAT

    key, title = table_line(examples()["column/entry"])
    monkeypatch.setitem(tables.MAIN_COLUMNS, key, title)
    submission = tmp_path / "submissions" / "optimal"
    run_eval(compose_config("eval", ["env=RAGEN/Sokoban-6x6-v0", "agent=optimal", "limit=2", f"out={submission}",
                                     "progress=false"]))
    (submission / rundir.LOCK).unlink()
    (submission / "submission.json").write_text(json.dumps({
        "format": FORMAT, "name": "optimal", "model": "scripted", "recipe": "scripted", "date": "2026-12-01",
        "contact": "tests", "trained_on_train_panels": False,
    }))
    board = tmp_path / "board"
    build(tmp_path / "submissions", board)
    value = json.loads((submission / "summary.json").read_text())["groups"][0][key]

    lines = (board / "README.md").read_text().splitlines()
    # The detail table: its header names the env and the coverage; its one row follows the separator.
    header = next(i for i, line in enumerate(lines) if line.startswith("| entry | model |") and "| coverage |" in line)
    titles, cells = ([cell.strip() for cell in lines[i].strip("|").split("|")] for i in (header, header + 2))
    assert dict(zip(titles, cells))[title] == f"{value:.3f}"
    (row,) = csv.DictReader(io.StringIO((board / "leaderboard.csv").read_text()))
    assert float(row[key]) == value
    assert f"<th>{html.escape(title)}</th>" in (board / "index.html").read_text()


# -- the page names what exists, and everything that exists ----------------------------------------

# Paths the page writes from the repository's root; every other path is read under ragen_bench/.
ROOT_PREFIXES = ("ragen_bench/", "tests/", "scripts/", "docs/")
ROOT_FILES = {"setup.py"}


def _data_packages() -> dict[str, str]:
    """setup.py's ``DATA_PACKAGES``: the packages mapped onto the checkout's data/ and configs/."""
    for node in ast.walk(ast.parse((REPO_ROOT / "setup.py").read_text())):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "DATA_PACKAGES" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py has no DATA_PACKAGES")


def _expand(token: str) -> list[str]:
    """``chat/{config,parser}.py`` -> ``chat/config.py``, ``chat/parser.py``."""
    braces = re.search(r"\{([^{}]*)\}", token)
    if braces is None:
        return [token]
    return [name for part in braces.group(1).split(",")
            for name in _expand(token[:braces.start()] + part + token[braces.end():])]


def _named() -> list[str]:
    """Every word in the page's inline code, braces expanded; code blocks, comments and
    placeholders (``<family>``) left out."""
    text = re.sub(r"```.*?```|<!--.*?-->", "", DOC.read_text(encoding="utf-8"), flags=re.S)
    words = [word.strip(",;:()") for span in re.findall(r"`([^`\n]+)`", text) for word in span.split()]
    return [name for word in words for name in _expand(word) if "<" not in name]


def _path_of(name: str) -> Path:
    return REPO_ROOT / name if name.startswith(ROOT_PREFIXES) or name in ROOT_FILES else PACKAGE / name


def _top_level_names(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def _module_of(dotted: str) -> tuple[Path | None, list[str]]:
    """The file of the longest module prefix of ``dotted`` (a data package: its folder), and the rest."""
    parts, data = dotted.split("."), _data_packages()
    for cut in range(len(parts), 0, -1):
        base = REPO_ROOT.joinpath(*parts[:cut])
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if path.is_file():
                return path, parts[cut:]
        if ".".join(parts[:cut]) in data:
            return REPO_ROOT / data[".".join(parts[:cut])], parts[cut:]
    return None, parts


def test_every_path_and_module_the_page_names_exists():
    missing = []
    for name in _named():
        if name.endswith(".py"):
            path = _path_of(name)
            if not path.is_file():
                missing.append(name)
        elif re.fullmatch(r"ragen_bench(\.\w+)+", name):
            path, rest = _module_of(name)
            if path is None:
                continue
            # Past the module, a name it defines (a class, a function, a table): only one level is checked.
            if rest and (path.is_dir() or rest[0] not in _top_level_names(path)):
                missing.append(name)
    assert missing == [], f"docs/architecture.md names what does not exist: {missing}"


def test_every_module_is_named_on_the_page():
    named = set()
    for name in _named():
        if name.endswith(".py"):
            named.add(_path_of(name))
        elif re.fullmatch(r"ragen_bench(\.\w+)+", name):
            path, rest = _module_of(name)
            if path is not None and not rest:
                named.add(path)
    modules = sorted(PACKAGE.rglob("*.py"))
    unnamed = [str(path.relative_to(PACKAGE)) for path in modules if path not in named]
    assert unnamed == [], f"docs/architecture.md does not name these modules of ragen_bench/: {unnamed}"


def test_the_layer_rows_are_in_test_layers_order():
    section = DOC.read_text(encoding="utf-8").split("## Layers, bottom to top", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    assert [layer for row in rows for layer in re.findall(r"`(\w+)`", row)] == list(LAYERS)


def test_the_checks_catch_a_stale_name_and_a_new_module(tmp_path, monkeypatch):
    # The two checks above read the page and the package; pointed at a page that names a module
    # that is gone and a package with one module the page does not name, both fail.
    page = tmp_path / "architecture.md"
    page.write_text(DOC.read_text(encoding="utf-8") + "\nAlso `chat/gone.py` and `ragen_bench.chat.gone`.\n")
    monkeypatch.setattr(sys.modules[__name__], "DOC", page)
    with pytest.raises(AssertionError, match=r"\['chat/gone.py', 'ragen_bench.chat.gone'\]"):
        test_every_path_and_module_the_page_names_exists()
    package = tmp_path / "ragen_bench"
    package.mkdir()
    (package / "extra.py").write_text("")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    with pytest.raises(AssertionError, match=r"\['extra.py'\]"):
        test_every_module_is_named_on_the_page()
