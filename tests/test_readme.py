"""The README's examples run as written.

Every Python block runs in a fresh interpreter.  Every command of every bash block is parsed
from the README and either run here (in README order, in one scratch folder, so a command can
use what an earlier one wrote) or named in :data:`NOT_RUN` with the reason; a command that is
neither fails :func:`test_every_readme_command_is_run_or_listed`, so a new one cannot slip in
untested.  Where the README shows what a command prints (a ``text`` block after its bash
block), the output is checked against it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, run_python

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)
BASH_BLOCKS = [(match.start(), match.group(1)) for match in re.finditer(r"```bash\n(.*?)```", README, flags=re.DOTALL)]

# Commands of the README's bash blocks that this file does not run, by the start of the command
# (each entry must match exactly one command), with the reason.
NOT_RUN = {
    "pip install ragen-bench": "installs from the package registry; scripts/check_wheel.sh (make test) checks the wheel",
    "VLLM_CPU_KVCACHE_SPACE=1 .venv-vllm/bin/python -m vllm.entrypoints.openai.api_server":
        "starts a vLLM server in .venv-vllm and keeps running; tests/test_vllm_integration.py serves and queries one",
    "ragen-bench eval env=RAGEN/Sokoban-6x6-v0 agent=openai":
        "needs the vLLM server of the line before; tests/test_vllm_integration.py runs this agent against a real server",
    "ragen-bench leaderboard build": "replays every submission and draws the page and its frames (~10 min of CPU "
        "on the 2-core machine); tests/test_leaderboard_build.py builds from test submissions",
}

# Commands that load a model (torch + transformers; the hf or train extra).
NEEDS_TORCH = ("agent=hf", "ragen-bench train preset=")


def _commands(block: str) -> list[str]:
    """The commands of a bash block: continuation lines joined, comments dropped, spaces collapsed."""
    joined = block.replace("\\\n", " ")
    return [" ".join(words) for line in joined.splitlines() if (words := shlex.split(line, comments=True))]


COMMANDS = [command for _, block in BASH_BLOCKS for command in _commands(block)]
TO_RUN = [command for command in COMMANDS if not any(command.startswith(key) for key in NOT_RUN)]


def test_readme_has_python_examples():
    assert len(PYTHON_BLOCKS) >= 2


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[f"block{i}" for i in range(len(PYTHON_BLOCKS))])
def test_readme_python_example_runs(block):
    # A fresh interpreter per block, as a reader would paste it.
    run_python(block)


def test_every_readme_command_is_run_or_listed():
    assert any(command.startswith("ragen-bench eval ") for command in TO_RUN)
    for key, reason in NOT_RUN.items():
        matches = [command for command in COMMANDS if command.startswith(key)]
        assert len(matches) == 1, f"NOT_RUN entry {key!r} ({reason}) matches {len(matches)} README commands"
    for command in TO_RUN:
        assert command.startswith("ragen-bench "), (
            f"README command {command!r} is neither a ragen-bench command run here nor listed in NOT_RUN")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """The folder the README's commands run in: empty but for a copy of the leaderboard submissions."""
    folder = tmp_path_factory.mktemp("readme")
    shutil.copytree(REPO_ROOT / "leaderboard" / "submissions", folder / "leaderboard" / "submissions")
    return folder


_RESULTS: dict[int, subprocess.CompletedProcess] = {}
_HAS_TORCH = all(importlib.util.find_spec(name) is not None for name in ("torch", "transformers"))


def _needs_torch(command: str) -> bool:
    return any(marker in command for marker in NEEDS_TORCH)


def _run_through(index: int, folder: Path) -> subprocess.CompletedProcess:
    """Run TO_RUN[0..index] in order (each once per session) and return the result of ``index``."""
    env = dict(os.environ, COLUMNS="100")
    for position in range(index + 1):
        if position not in _RESULTS and not (_needs_torch(TO_RUN[position]) and not _HAS_TORCH):
            words = shlex.split(TO_RUN[position])
            _RESULTS[position] = subprocess.run(
                [sys.executable, "-m", "ragen_bench.cli", *words[1:]],
                cwd=folder, env=env, capture_output=True, text=True, timeout=900,
            )
    return _RESULTS[index]




@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(TO_RUN)), ids=[command[:70] for command in TO_RUN])
def test_readme_command_runs(index, scratch):
    if _needs_torch(TO_RUN[index]) and not _HAS_TORCH:
        pytest.skip("needs torch and transformers (pip install torch==2.13.0 'ragen-bench[train]')")
    done = _run_through(index, scratch)
    assert done.returncode == 0, f"{TO_RUN[index]}\n{done.stdout}\n{done.stderr}"


def _shown_output(command: str) -> str | None:
    """The ``text`` block that follows the bash block holding ``command``, if it comes before the next bash block."""
    for number, (start, block) in enumerate(BASH_BLOCKS):
        if command in _commands(block):
            end = BASH_BLOCKS[number + 1][0] if number + 1 < len(BASH_BLOCKS) else len(README)
            shown = re.search(r"```text\n(.*?)```", README[start:end], flags=re.DOTALL)
            return shown.group(1) if shown else None
    raise AssertionError(command)


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.replace("\r", "\n").splitlines()]


def test_readme_eval_example_prints_the_table_shown(scratch):
    """The first eval command's stdout (at 100 columns) is exactly the README's table."""
    index = next(i for i, command in enumerate(TO_RUN) if command.startswith("ragen-bench eval "))
    shown = _shown_output(TO_RUN[index])
    assert shown is not None, "the README shows no output after its first eval command"
    done = _run_through(index, scratch)
    assert done.returncode == 0, done.stderr
    assert _lines(done.stdout) == _lines(shown)


@pytest.mark.slow
def test_readme_train_smoke_prints_the_lines_shown(scratch):
    """Each line the README shows after the train smoke command is in what it prints (stdout and stderr)."""
    index = next(i for i, command in enumerate(TO_RUN) if command.startswith("ragen-bench train preset="))
    shown = _shown_output(TO_RUN[index])
    assert shown is not None, "the README shows no output after its train smoke command"
    if not _HAS_TORCH:
        pytest.skip("needs torch and transformers (pip install torch==2.13.0 'ragen-bench[train]')")
    done = _run_through(index, scratch)
    assert done.returncode == 0, done.stderr
    printed = set(_lines(done.stdout) + _lines(done.stderr))
    missing = [line for line in _lines(shown) if line and line not in printed]
    assert not missing, f"README lines not printed: {missing}"


def test_train_guide_has_the_readme_smoke_command():
    """docs/train.md's smoke run is the README's, word for word (one command, one measured time)."""
    smoke = next(command for command in TO_RUN if command.startswith("ragen-bench train preset="))
    guide = (REPO_ROOT / "docs" / "train.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", guide, flags=re.DOTALL)
    assert smoke in [command for block in blocks for command in _commands(block)]
