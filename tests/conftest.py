"""Shared test helpers: the RAGEN reference fixtures and subprocess runs."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
REFERENCE_FIXTURES = REPO_ROOT.parent / "shared" / "fixtures" / "ragen_reference.jsonl"

# Speed benchmarks measure; they are not part of the test run (`make bench` runs them).
collect_ignore = [] if os.environ.get("RAGEN_BENCH_BENCHMARKS") == "1" else ["benchmarks"]


def in_ci() -> bool:
    """CI sets ``CI=true``; there, what a user's clone may lack must be present."""
    return os.environ.get("CI", "").lower() == "true"


@lru_cache(maxsize=1)
def _all_reference_records() -> tuple[dict, ...]:
    with REFERENCE_FIXTURES.open(encoding="utf-8") as handle:
        return tuple(json.loads(line) for line in handle if line.strip())


def reference_records(ragen_env_name: str) -> list[dict]:
    """Records of one RAGEN config name; skips the test when the fixture file is absent.

    The file is recorded from RAGEN's own envs and lives outside the repo
    (``../shared/fixtures``); CI always has it (a missing file fails there), a user's
    clone may not (the test skips).  The
    checksummed panels in ``data/`` keep guarding determinism either way.
    """
    if not REFERENCE_FIXTURES.exists():
        message = f"RAGEN reference fixtures not found at {REFERENCE_FIXTURES} (only in the project workspace/CI)"
        if in_ci():
            pytest.fail(message + "; CI=true, so this is a failure, not a skip")
        pytest.skip(message)
    return [r for r in _all_reference_records() if r["env"] == ragen_env_name]


RAGEN2_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "ragen2"


@lru_cache(maxsize=None)
def ragen2_records(family: str) -> tuple[dict, ...]:
    """RAGEN-2's recorded episodes of ``family``: ``tests/fixtures/ragen2/<family>.jsonl[.gz]``,
    written by ``scripts/ragen2_reference/`` (part of the repository, so never skipped)."""
    plain = RAGEN2_FIXTURES / f"{family}.jsonl"
    path = plain if plain.exists() else plain.with_suffix(".jsonl.gz")
    with (gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")) as lines:
        return tuple(json.loads(line) for line in lines)


def run_python(code: str, *, hash_seed: str = "0", timeout: float = 120) -> str:
    """Run ``code`` in a fresh interpreter (given PYTHONHASHSEED) and return its stdout."""
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=timeout, cwd=REPO_ROOT
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def one_line_error(capsys, *names: str) -> str:
    """The CLI's stderr: exactly one line, no traceback, naming every string in ``names``."""
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for name in names:
        assert name in err, err
    return err


@pytest.fixture
def wide_terminal(monkeypatch):
    """A terminal wide enough that ``eval``/``compare`` tables print as one table (tests that read columns)."""
    monkeypatch.setenv("COLUMNS", "1000")


@pytest.fixture
def chat_checks(monkeypatch) -> list[object]:
    """Every ``chat`` section :func:`ragen_bench.chat.config.check_chat` is given during the test."""
    from ragen_bench.chat import config as chat_module

    seen: list[object] = []
    check_chat = chat_module.check_chat

    def counting(settings, *args, **kwargs):
        seen.append(settings)
        return check_chat(settings, *args, **kwargs)

    monkeypatch.setattr(chat_module, "check_chat", counting)
    return seen
