"""Reading a submission folder as data only: bounded sizes, plain files, no escape.

Nothing in a submission is executed or unpickled: every file is JSON (``episodes`` as
JSON lines, optionally gzip-compressed).  Every read is bounded before it happens
(``LIMITS``; a gzip file is bounded by its *decompressed* size, and episode logs are
streamed a chunk at a time, so a small bomb is refused as its output passes the limit,
holding one chunk), and a path from inside a submission must be
relative, free of ``..`` and of symbolic links at every step, so no file outside
the folder is ever read.
"""

from __future__ import annotations

import json
import math
import os
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, NoReturn

from ragen_bench.leaderboard.errors import LeaderboardError

# Largest accepted size of each file, in bytes (episodes: after decompression).
LIMITS: dict[str, int] = {
    "submission.json": 64 * 1024,
    "manifest.json": 1024 * 1024,
    "summary.json": 4 * 1024 * 1024,
    "episodes.jsonl": 256 * 1024 * 1024,
    # A training run's logs (``training_metrics`` and the validation.jsonl beside it).
    "metrics.jsonl": 16 * 1024 * 1024,
    "validation.jsonl": 1024 * 1024,
}
# One episode record: 5 turns of 4096-character replies fit many times over.
MAX_LINE_BYTES = 4 * 1024 * 1024
# Episode logs are read (and decompressed) this much at a time.
CHUNK_BYTES = 1024 * 1024
EPISODE_FILES = ("episodes.jsonl", "episodes.jsonl.gz")


def inside(root: Path, relative: str, *, what: str, file: str | None = None) -> Path:
    """``root / relative``, refused when ``relative`` could lead out of ``root``.

    Absolute paths, ``..`` components and symbolic links (at any step, checked with
    ``lstat``) are refused, naming ``what`` (the field that gave the path) and ``file`` (where it stands).
    """
    where = {"field": what, "file": file}
    pure = PurePosixPath(relative)
    if pure.is_absolute() or "\\" in relative or "\0" in relative:
        raise LeaderboardError(f"path {relative!r} must be relative (inside the submission folder)", **where)
    if ".." in pure.parts:
        raise LeaderboardError(f"path {relative!r} contains '..'; paths must stay inside the submission folder",
                               **where)
    path = root
    for part in pure.parts:
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except (FileNotFoundError, NotADirectoryError):
            break  # nothing further down exists, so no link either: the reader reports the missing file
        except OSError as error:  # a name too long for the file system, a folder it may not enter
            raise LeaderboardError(f"path {relative!r} cannot be read ({error.strerror})", **where) from None
        if stat.S_ISLNK(mode):
            raise LeaderboardError(
                f"{path} is a symbolic link; submissions hold plain files and folders only", **where
            )
    return root.joinpath(*pure.parts)


def _open_bounded(path: Path, limit: int) -> BinaryIO:
    """The plain file ``path`` (no symlink) opened for reading, refused when larger than ``limit``."""
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # (the latter: a file where the path needs a folder)
        raise LeaderboardError("file is missing", file=str(path)) from None
    except OSError as error:  # a name too long for the file system, a folder it may not enter
        raise LeaderboardError(f"cannot be read ({error.strerror})", file=str(path)) from None
    if stat.S_ISLNK(info.st_mode):
        raise LeaderboardError("is a symbolic link; submissions hold plain files only", file=str(path))
    if not stat.S_ISREG(info.st_mode):
        raise LeaderboardError("is not a regular file", file=str(path))
    if info.st_size > limit:
        raise LeaderboardError(f"file is {info.st_size} bytes, over the limit of {limit}", file=str(path))
    # O_NOFOLLOW: a file swapped for a link after the lstat is still not followed.
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as error:  # no permission, or a link swapped in since the lstat (ELOOP)
        raise LeaderboardError(f"cannot be read ({error.strerror})", file=str(path)) from None
    return os.fdopen(fd, "rb")


def _grew(limit: int, name: str) -> LeaderboardError:
    return LeaderboardError(f"file grew over the limit of {limit} bytes while read", file=name)


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of the plain file ``path`` (no symlink), refused when larger than ``limit``."""
    with _open_bounded(path, limit) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise _grew(limit, str(path))
    return data


def _chunks(handle: BinaryIO, limit: int, *, name: str) -> Iterator[bytes]:
    """The bytes of ``handle`` from where it stands, :data:`CHUNK_BYTES` at a time; at most ``limit`` in all."""
    total = 0
    while chunk := handle.read(CHUNK_BYTES):
        total += len(chunk)
        if total > limit:
            raise _grew(limit, name)
        yield chunk


_APPENDED = "holds data after the gzip stream (concatenated or appended bytes)"


def _gunzip_chunks(handle: BinaryIO, limit: int, *, name: str) -> Iterator[bytes]:
    """The decompressed gzip stream of ``handle``, in pieces of at most :data:`CHUNK_BYTES`.

    Refused as soon as the output passes ``limit`` bytes: one piece of output and one of
    input are held at a time, whatever the stream decompresses to (a "bomb" costs a chunk).
    """
    decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    total = 0
    for compressed in _chunks(handle, limit, name=name):
        if decompressor.eof:
            raise LeaderboardError(_APPENDED, file=name)
        data = compressed
        while True:
            try:
                out = decompressor.decompress(data, CHUNK_BYTES)
            except zlib.error as error:
                raise LeaderboardError(f"not valid gzip data ({error})", file=name) from None
            total += len(out)
            if total > limit:
                raise LeaderboardError(f"decompresses to over the limit of {limit} bytes", file=name)
            if out:
                yield out
            data = decompressor.unconsumed_tail
            # A full piece of output may leave more pending in the stream, even with no input left.
            if decompressor.eof or (not data and len(out) < CHUNK_BYTES):
                break
        if decompressor.unused_data:
            raise LeaderboardError(_APPENDED, file=name)
    if not decompressor.eof:
        raise LeaderboardError("gzip data is truncated", file=name)


class _NotFinite(ValueError):
    """A number JSON can spell but no float holds (``NaN``, ``1e999``, a 400-digit int); ``args[0]`` is its spelling."""


def _finite_float(text: str) -> float:
    # float() reads 1e999 as inf without complaint: the spelling is legal JSON, the value is not a number we take.
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(text)
    return value


# An int literal of fewer digits is below the largest float (1.8e308); of more, above it.
_FLOAT_DIGITS = 309


def _finite_int(text: str) -> int:
    """``int(text)``, refused when no float holds it (a table, plot or mean would turn it into inf or raise)."""
    digits = len(text) - text.startswith("-")
    if digits < _FLOAT_DIGITS:
        return int(text)
    # Longer literals are refused unread: int() would otherwise be asked for thousands of digits.
    if digits == _FLOAT_DIGITS:
        value = int(text)
        try:
            float(value)
        except OverflowError:
            pass
        else:
            return value
    raise _NotFinite(text)


def _no_constants(name: str) -> NoReturn:
    # NaN and Infinity are not JSON; Python's parser accepts them unless told not to.
    raise _NotFinite(name)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"key {key!r} appears twice in one object")
        result[key] = value
    return result


def parse_json(data: bytes, *, name: str, line: int | None = None, unique_keys: bool = True) -> Any:
    """Strict JSON: UTF-8, finite numbers only, and (with ``unique_keys``) no repeated key in an object.

    A number is refused however it is spelled when no float holds it: ``NaN``, ``Infinity``,
    ``1e999``, ``-1e999``, an int of 310 digits; the error names the field where it stands.
    """
    try:
        return json.loads(
            data,
            parse_float=_finite_float,
            parse_int=_finite_int,
            parse_constant=_no_constants,
            object_pairs_hook=_unique_keys if unique_keys else None,
        )
    except _NotFinite as error:
        raise LeaderboardError(f"{_spelling(error.args[0])} is not a finite number", file=name, line=line,
                               field=_non_finite_field(data)) from None
    except (ValueError, UnicodeDecodeError) as error:
        raise LeaderboardError(f"not valid JSON ({error})", file=name, line=line) from None
    except RecursionError:
        raise LeaderboardError("JSON nested too deeply", file=name, line=line) from None


def _spelling(text: str) -> str:
    """A number as written, cut so that a 4,000-digit int still leaves a one-line error."""
    return text if len(text) <= 32 else f"{text[:16]}... ({len(text)} characters)"


class _Pairs(list):  # type: ignore[type-arg]
    """A JSON object as its ``(key, value)`` pairs, repeated keys kept: the search sees every value the parser saw."""


def _non_finite_field(data: bytes) -> str | None:
    """Where the first number no float holds stands in ``data`` (``turns[0].env_rewards[1]``); ``None`` at the top.

    Runs only after the strict parse refused such a number, so the cost is paid by refused files alone.
    """
    try:
        # Every number no float holds becomes inf or nan here, so the search looks for one kind.
        value = json.loads(data, parse_int=_int_or_inf, parse_constant=float, object_pairs_hook=_Pairs)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None  # the strict parse stopped at the number; something after it is broken too
    # Depth first in document order, without recursion (a value may be nested thousands deep).
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if _not_finite(item):
            return path or None
        if isinstance(item, _Pairs):
            children = [(f"{path}.{key}" if path else str(key), child) for key, child in item]
        elif isinstance(item, list):
            children = [(f"{path}[{index}]", child) for index, child in enumerate(item)]
        else:
            continue
        stack.extend(reversed(children))
    return None


def _not_finite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def _int_or_inf(text: str) -> int | float:
    try:
        return _finite_int(text)
    except _NotFinite:
        return math.inf


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
    """``(line number, record)`` of an episode log; every line must be one JSON object.

    Read as a stream, twice: first the checks of the whole file (sizes, gzip, the last
    newline), then the records, a line at a time.  Memory stays at about a line and a
    chunk, however large the file or what it decompresses to.
    """
    limit, name = LIMITS["episodes.jsonl"], str(path)
    with _open_bounded(path, limit) as handle:

        def stream() -> Iterator[bytes]:
            handle.seek(0)
            if path.name.endswith(".gz"):
                return _gunzip_chunks(handle, limit, name=name)
            return _chunks(handle, limit, name=name)

        long_line = _scan(stream(), name=name)

        def too_long(number: int, length: int) -> LeaderboardError:
            if long_line is not None and long_line[0] == number:
                length = long_line[1]  # the whole line's length, which the scan measured
            return LeaderboardError(f"line is {length} bytes, over the limit of {MAX_LINE_BYTES}",
                                    file=name, line=number)

        # Split on b"\n" only: JSON escapes every line break inside strings, and a bare
        # b"\r" between tokens is whitespace, not a line end.
        number, pending = 0, b""
        for chunk in stream():
            *complete, pending = (pending + chunk).split(b"\n")
            for line in complete:
                number += 1
                if len(line) > MAX_LINE_BYTES:
                    raise too_long(number, len(line))
                record = parse_json(line, name=name, line=number, unique_keys=False)
                if not isinstance(record, dict):
                    raise LeaderboardError("not an episode record (a JSON object is expected)", file=name, line=number)
                yield number, record
            if len(pending) > MAX_LINE_BYTES:
                raise too_long(number + 1, len(pending))


def _scan(chunks: Iterator[bytes], *, name: str) -> tuple[int, int] | None:
    """``(number, length)`` of the stream's first line over :data:`MAX_LINE_BYTES`, or ``None``.

    Refuses a stream whose last line has no newline (a cut-off file).
    """
    lines, length, long_line, last = 0, 0, None, b"\n"
    for chunk in chunks:
        first = chunk.find(b"\n")
        if first < 0:
            length += len(chunk)
        else:
            length += first
            if length > MAX_LINE_BYTES and long_line is None:
                long_line = (lines + 1, length)
            # (A line wholly inside one chunk is shorter than a chunk: the second pass measures it.)
            lines += chunk.count(b"\n")
            length = len(chunk) - chunk.rfind(b"\n") - 1
        last = chunk[-1:]
    if last != b"\n":
        raise LeaderboardError("the last line has no newline (a cut-off file?)", file=name, line=lines + 1)
    return long_line
