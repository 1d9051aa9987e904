"""Reading a submission folder as data only: bounded sizes, plain files, no escape.

Nothing in a submission is executed or unpickled: every file is JSON (``episodes`` as
JSON lines, optionally gzip-compressed).  Every read is bounded before it happens
(``LIMITS``; a gzip file is bounded by its *decompressed* size, so a small bomb is
refused after reading at most the limit), and a path from inside a submission must be
relative, free of ``..`` and of symbolic links at every step, so no file outside
the folder is ever read.
"""

from __future__ import annotations

import json
import os
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from ragen_bench.leaderboard.errors import LeaderboardError

# Largest accepted size of each file, in bytes (episodes: after decompression).
LIMITS: dict[str, int] = {
    "submission.json": 64 * 1024,
    "manifest.json": 1024 * 1024,
    "summary.json": 4 * 1024 * 1024,
    "episodes.jsonl": 256 * 1024 * 1024,
}
# One episode record: 5 turns of 4096-character replies fit many times over.
MAX_LINE_BYTES = 4 * 1024 * 1024
EPISODE_FILES = ("episodes.jsonl", "episodes.jsonl.gz")


def inside(root: Path, relative: str, *, what: str) -> Path:
    """``root / relative``, refused when ``relative`` could lead out of ``root``.

    Absolute paths, ``..`` components and symbolic links (at any step, checked with
    ``lstat``) are refused, naming ``what`` (the field that gave the path).
    """
    pure = PurePosixPath(relative)
    if pure.is_absolute() or "\\" in relative or "\0" in relative:
        raise LeaderboardError(f"path {relative!r} must be relative (inside the submission folder)", field=what)
    if ".." in pure.parts:
        raise LeaderboardError(f"path {relative!r} contains '..'; paths must stay inside the submission folder",
                               field=what)
    path = root
    for part in pure.parts:
        path = path / part
        if path.is_symlink():
            raise LeaderboardError(
                f"{path} is a symbolic link; submissions hold plain files and folders only", field=what
            )
    return path


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of the plain file ``path`` (no symlink), refused when larger than ``limit``."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise LeaderboardError("file is missing", file=str(path)) from None
    if stat.S_ISLNK(info.st_mode):
        raise LeaderboardError("is a symbolic link; submissions hold plain files only", file=str(path))
    if not stat.S_ISREG(info.st_mode):
        raise LeaderboardError("is not a regular file", file=str(path))
    if info.st_size > limit:
        raise LeaderboardError(f"file is {info.st_size} bytes, over the limit of {limit}", file=str(path))
    # O_NOFOLLOW: a file swapped for a link after the lstat is still not followed.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise LeaderboardError(f"file grew over the limit of {limit} bytes while read", file=str(path))
    return data


def gunzip_bounded(data: bytes, limit: int, *, name: str) -> bytes:
    """Decompress gzip ``data``, refusing output beyond ``limit`` bytes without producing it."""
    decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = decompressor.decompress(data, limit + 1)
    except zlib.error as error:
        raise LeaderboardError(f"not valid gzip data ({error})", file=name) from None
    if len(out) > limit:
        raise LeaderboardError(f"decompresses to over the limit of {limit} bytes", file=name)
    if not decompressor.eof:
        raise LeaderboardError("gzip data is truncated", file=name)
    if decompressor.unused_data:
        raise LeaderboardError("holds data after the gzip stream (concatenated or appended bytes)", file=name)
    return out


def _no_constants(name: str) -> Any:
    # NaN and Infinity are not JSON; Python's parser accepts them unless told not to.
    raise ValueError(f"{name} is not a JSON number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"key {key!r} appears twice in one object")
        result[key] = value
    return result


def parse_json(data: bytes, *, name: str, line: int | None = None, unique_keys: bool = True) -> Any:
    """Strict JSON: UTF-8, no NaN/Infinity, and (with ``unique_keys``) no repeated key in an object."""
    try:
        return json.loads(
            data,
            parse_constant=_no_constants,
            object_pairs_hook=_unique_keys if unique_keys else None,
        )
    except (ValueError, UnicodeDecodeError) as error:
        raise LeaderboardError(f"not valid JSON ({error})", file=name, line=line) from None
    except RecursionError:
        raise LeaderboardError("JSON nested too deeply", file=name, line=line) from None


def read_json_file(path: Path, *, name: str) -> Any:
    """A small JSON file of a submission, by its name in :data:`LIMITS`."""
    return parse_json(read_bounded(path, LIMITS[name]), name=str(path))


def find_episodes(run_dir: Path) -> Path:
    """The episode log of ``run_dir``: ``episodes.jsonl`` or ``episodes.jsonl.gz`` (exactly one)."""
    present = [run_dir / name for name in EPISODE_FILES if os.path.lexists(run_dir / name)]
    if len(present) != 1:
        found = "both" if present else "neither"
        raise LeaderboardError(f"needs exactly one of {' or '.join(EPISODE_FILES)}; found {found}", file=str(run_dir))
    return present[0]


def episode_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, record)`` of an episode log; every line must be one JSON object."""
    limit = LIMITS["episodes.jsonl"]
    data = read_bounded(path, limit)
    if path.name.endswith(".gz"):
        data = gunzip_bounded(data, limit, name=str(path))
    if data and not data.endswith(b"\n"):
        raise LeaderboardError("the last line has no newline (a cut-off file?)", file=str(path),
                               line=data.count(b"\n") + 1)
    # Split on b"\n" only: JSON escapes every line break inside strings, and a bare
    # b"\r" between tokens is whitespace, not a line end.
    for number, line in enumerate(data.split(b"\n")[:-1], start=1):
        if len(line) > MAX_LINE_BYTES:
            raise LeaderboardError(f"line is {len(line)} bytes, over the limit of {MAX_LINE_BYTES}",
                                   file=str(path), line=number)
        record = parse_json(line, name=str(path), line=number, unique_keys=False)
        if not isinstance(record, dict):
            raise LeaderboardError("not an episode record (a JSON object is expected)", file=str(path), line=number)
        yield number, record
