"""Run files written whole or not at all, and configs compared key by key: the ground floor.

Every file the project writes for keeps (run directories, checkpoints, SFT exports, the
frozen panel and suite files) goes through :func:`replace_atomically`: the bytes go to a
temporary file beside the target, are flushed and fsynced, the file is renamed over the
target and the directory is fsynced, so a reader (or a crash, or a kill) sees the old file
or the new one, never a mix.  The temporary file is ``.<name>.<random>.tmp``; one left by a
killed writer is harmless (``eval.rundir.locked`` sweeps them from run directories).

:func:`difference` finds where two JSON-like values first differ; :func:`first_difference`
is its key path for configs, and :func:`require_same_config` is the one refusal of a resume
with another config (eval, train and merge all use it).  What a run *is* is its config
without the keys that do not change what it computes: :func:`identity`, given the
command's ``FREE_KEYS`` (``ragen_bench.eval.config.FREE_KEYS``,
``ragen_bench.train.config.FREE_KEYS``).

This module imports nothing of ``ragen_bench``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

# The value a difference reports for a key one side lacks.
ABSENT = "<absent>"


# -- writing ---------------------------------------------------------------------------------


def json_bytes(obj: Any, **options: Any) -> bytes:
    """``obj`` as UTF-8 JSON, readable where possible and storable always.

    ``ensure_ascii=False`` keeps board symbols such as ``√`` readable, but a str may
    hold lone surrogates (a model's broken emoji), which UTF-8 cannot encode.  Such a
    document falls back to ASCII escapes, which ``json.loads`` turns back into the
    identical str.  ``options`` go to :func:`json.dumps`.
    """
    try:
        return json.dumps(obj, ensure_ascii=False, **options).encode()
    except UnicodeEncodeError:
        return json.dumps(obj, ensure_ascii=True, **options).encode()


def fsync_dir(path: Path) -> None:
    """Make a rename (or a new file) in directory ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(path: Path) -> None:
    """Make every file and folder under ``path`` durable, deepest first.

    For a folder written by other code (``save_pretrained``, ``torch.save``) that is then
    renamed into place: the rename is atomic only once what it names is on disk.
    """
    for folder, _, names in os.walk(path, topdown=False):
        for name in names:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(Path(folder))


def replace_atomically(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """Write ``path`` through ``write`` into a temp file, fsync, then rename over it.

    Readers (and a crash) see the old file or the new one, never a mix; when ``write``
    fails the old file stays and the temp file is removed.  The new file is mode 0644.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp creates 0600; run files are meant to be shared like any output.
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``, atomically."""
    replace_atomically(path, lambda handle: handle.write(data))


def write_text_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in UTF-8, atomically."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: Path, obj: Any) -> None:
    """Replace ``path`` with ``obj`` as run-file JSON (indent 2, sorted keys, see :func:`json_bytes`), atomically."""
    write_bytes_atomic(path, json_bytes(obj, indent=2, sort_keys=True) + b"\n")


# -- comparing -------------------------------------------------------------------------------


def difference(a: Any, b: Any, prefix: str = "", *, strict: bool = False) -> tuple[str, Any, Any] | None:
    """``(path, value in a, value in b)`` where two JSON-like values first differ, or ``None``.

    ``path`` names the place from ``prefix``: ``prefix.key.key``, ``prefix[index]`` for a list
    element, ``prefix (length)`` for lists of different lengths (whose values are then the
    lengths), and ``<root>`` for the values themselves when ``prefix`` is empty.  A key one
    side lacks has the value :data:`ABSENT` there.

    Two ways to compare:

    * configs (the default): Python equality (``1 == 1.0``), mappings walked key by key in
      sorted order, a list compared whole;
    * ``strict``, as a verifier compares data it recomputed: JSON values must be identical
      (``true`` is not ``1``, ``1`` is not ``1.0``), lists are walked element by element, and
      keys are visited in ``a``'s order, then ``b``'s other keys.
    """
    if strict and type(a) is not type(b):
        return prefix or "<root>", a, b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        keys = [*a, *(key for key in b if key not in a)] if strict else sorted(set(a) | set(b), key=str)
        for key in keys:
            name = f"{prefix}.{key}" if prefix else str(key)
            if key not in a or key not in b:
                return name, a.get(key, ABSENT), b.get(key, ABSENT)
            found = difference(a[key], b[key], name, strict=strict)
            if found is not None:
                return found
        return None
    if strict and isinstance(a, list):
        for index, (x, y) in enumerate(zip(a, b)):
            found = difference(x, y, f"{prefix}[{index}]", strict=True)
            if found is not None:
                return found
        if len(a) != len(b):
            return f"{prefix} (length)", len(a), len(b)
        return None
    return None if a == b else (prefix or "<root>", a, b)


def first_difference(a: Any, b: Any, prefix: str = "") -> str | None:
    """Dotted name of the first key where two JSON-like configs differ, or ``None`` (see :func:`difference`)."""
    found = difference(a, b, prefix)
    return None if found is None else found[0]


def identity(config: Mapping[str, Any], free_keys: Iterable[str]) -> dict[str, Any]:
    """``config`` without ``free_keys``, the keys that do not change what a run computes.

    A free key is a top-level key, or ``section.key`` for a key of a mapping section
    (``agent.num_threads``).  A run may be resumed with other values for them; everything
    else must match.
    """
    free = set(free_keys)
    kept = {}
    for key, value in config.items():
        if key in free:
            continue
        inner = {name.split(".", 1)[1] for name in free if name.startswith(f"{key}.")}
        kept[key] = {k: v for k, v in value.items() if k not in inner} if inner and isinstance(value, Mapping) else value
    return kept


def require_same_config(
    where: Path | str, recorded: Mapping[str, Any], requested: Mapping[str, Any], *, error: type[Exception]
) -> None:
    """Refuse to continue the run in ``where`` with another config: ``error`` names the first differing key."""
    found = difference(recorded, requested)
    if found is not None:
        key, old, new = found
        raise error(
            f"{where} holds a run with a different config: {key} is {old!r} there but "
            f"{new!r} now. Use another out= directory, or the recorded settings to resume."
        )
