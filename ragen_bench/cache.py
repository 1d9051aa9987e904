"""The user cache for built artefacts (converted SmolLM2, the tiny test model).

Directories are built once, atomically: into a private temporary sibling first, then
renamed into place, with a marker file recording what was built (a "stamp"), so a
crash never leaves a half-written checkpoint and a stale one is rebuilt.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from ragen_bench import runfiles

MARKER_FILE = "ragen_bench_build.json"


def cache_root() -> Path:
    """Where converted checkpoints live: ``$RAGEN_BENCH_CACHE``, else ``~/.cache/ragen-bench``."""
    configured = os.environ.get("RAGEN_BENCH_CACHE")
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "ragen-bench"


def recorded_stamp(directory: Path) -> dict | None:
    """The stamp recorded in ``directory``, or None if it holds no finished build."""
    try:
        recorded = json.loads((directory / MARKER_FILE).read_text())
    except (OSError, ValueError):
        return None
    return recorded if isinstance(recorded, dict) else None


def _is_current(directory: Path, stamp: dict) -> bool:
    return recorded_stamp(directory) == stamp


def build_once(target: Path, build: Callable[[Path], object], stamp: dict | None = None) -> Path:
    """Return ``target``, first filling it with ``build(directory)`` unless it already matches ``stamp``.

    ``build`` writes into a private temporary directory next to ``target`` that is then renamed
    into place, so a crash or a concurrent builder (pytest-xdist workers) never leaves a
    half-written directory under the final name.  A marker file records ``stamp``; a directory
    with a different stamp is rebuilt.
    """
    stamp = stamp or {}
    if _is_current(target, stamp):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        os.chmod(staging, 0o755)  # mkdtemp makes it owner-only; a checkpoint is not secret
        build(staging)
        (staging / MARKER_FILE).write_text(json.dumps(stamp))
        runfiles.fsync_tree(staging)  # a crash after the rename must not leave a stamped, empty model
        if target.exists() and not _is_current(target, stamp):
            shutil.rmtree(target, ignore_errors=True)
        try:
            os.rename(staging, target)
        except OSError:
            # Another process renamed its finished copy into place first: use that one.
            if not _is_current(target, stamp):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
