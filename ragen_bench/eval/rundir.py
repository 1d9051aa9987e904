"""Run-directory I/O: crash-safe episode log, reading run files, the run lock.

A run directory holds

``manifest.json``
    what produced the run (config, versions, panel checksums, template hash, machine);
``episodes.jsonl``
    one JSON line per finished episode (a trajectory dict), in finishing order;
``summary.json``
    the metrics, computed from ``episodes.jsonl`` alone.

Durability guarantee
--------------------
* Each finished episode is appended as one complete line by a single ``write``
  system call on an ``O_APPEND`` descriptor, as soon as the episode finishes; no
  episode waits in a user-space buffer.  Once that call has returned, killing the
  process at any moment (SIGKILL included) cannot lose the episode: the bytes are in
  the kernel's page cache.
* ``fsync`` runs after every batch of episodes and when the log is closed.  An
  operating-system crash or power loss can therefore lose at most the episodes of the
  batch in flight; those are simply run again on resume.
* A write cut short (by a kill during the call, or by a crash before ``fsync``)
  can leave a final line without its newline, or with garbage.  Reading the log for
  resume detects such a torn tail and truncates it away, so a line is either there
  completely or not at all.  A bad line anywhere *before* the last one is not a
  crash artifact and raises :class:`RunDirError`.
* JSON files (manifest, summary) are written with
  :func:`ragen_bench.runfiles.write_json_atomic`: to a temporary file, fsynced and
  renamed over the old one, so readers see the old or the new file, never a mix.
* An exclusive ``flock`` on ``.lock`` stops two processes from appending to the same
  log (which could duplicate episodes).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ragen_bench.runfiles import json_bytes, replace_atomically

MANIFEST = "manifest.json"
EPISODES = "episodes.jsonl"
SUMMARY = "summary.json"
LOCK = ".lock"

# Where an episode sits in a run's plan.  (Not ``chat.episode_key``, the string that
# names an episode to agents; this tuple sorts and compares as a plan position.)
EpisodeSlot = tuple[str, str, int, int]


class RunDirError(RuntimeError):
    """A run directory cannot be used as asked (locked, corrupt, or a different run)."""


def slot_of(record: Mapping[str, Any]) -> EpisodeSlot:
    """``(env_id, split, seed, sample)``: what makes an episode unique within a run."""
    return (record["env_id"], record["split"], int(record["seed"]), int(record["sample"]))


def encode_line(record: Mapping[str, Any]) -> bytes:
    """One JSONL line (see :func:`ragen_bench.runfiles.json_bytes` for the encoding)."""
    return json_bytes(record, separators=(",", ":")) + b"\n"


def read_json(path: Path) -> Any:
    """The JSON document at ``path``; an unreadable or malformed file raises :class:`RunDirError` naming it."""
    try:
        with open(path, "rb") as handle:
            return json.load(handle)
    except OSError as error:
        raise RunDirError(f"{path}: cannot read ({error.strerror or error})") from None
    except (ValueError, RecursionError) as error:  # RecursionError: arrays nested thousands deep
        raise RunDirError(f"{path}: corrupt, not valid JSON ({error})") from None


def _parse_line(line: bytes) -> dict[str, Any] | None:
    """The record on ``line`` (which includes its newline), or ``None`` if it is torn."""
    if not line.endswith(b"\n"):
        return None
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
        return None
    return record if isinstance(record, dict) else None


def iter_episodes(path: Path, *, repair: bool = False) -> Iterator[dict[str, Any]]:
    """The records of an episode log (see :func:`iter_numbered`)."""
    for _, record in iter_numbered(path, repair=repair):
        yield record


def iter_numbered(path: Path, *, repair: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, record)`` of an episode log, streamed (a big log never sits in memory whole).

    A torn final line is truncated away when ``repair`` is true (after the last good
    record has been yielded) and raises :class:`RunDirError` otherwise; a bad line
    before the last always raises.
    """
    path = Path(path)
    if not path.exists():
        return
    good_bytes = 0
    bad_line = 0
    # Binary iteration splits on b"\n" only; JSON escapes every control character
    # inside strings, so no other line break can occur within a record.
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if bad_line:
                raise RunDirError(f"{path}: line {bad_line} is not a complete JSON record")
            record = _parse_line(line)
            if record is None:
                bad_line = number
                continue
            good_bytes += len(line)
            yield number, record
    if bad_line:
        if not repair:
            raise RunDirError(f"{path}: torn final line {bad_line}; resume the run to repair it")
        with open(path, "r+b") as handle:
            handle.truncate(good_bytes)
            os.fsync(handle.fileno())


def read_episodes(path: Path, *, repair: bool = False) -> list[dict[str, Any]]:
    """All records of an episode log as a list (see :func:`iter_episodes`)."""
    return list(iter_episodes(path, repair=repair))


class PlannedEpisodes:
    """The records of an episode log that belong to a run's plan, each slot once.

    Iterating yields ``(line number, record)`` for the first record of every planned
    slot.  A later line that repeats a record exactly (a copied line) is skipped and
    counted in :attr:`duplicates`; a record for a slot that is not in ``planned`` (a
    foreign seed, another shard's episode), a second *different* record for a slot,
    or a line that is not an episode record raises :class:`RunDirError` naming the
    file and line, so nothing outside the plan can change a summary.
    """

    def __init__(self, path: Path, planned: set[EpisodeSlot] | frozenset[EpisodeSlot], *, repair: bool = False):
        self.path = Path(path)
        self.planned = planned
        self.repair = repair
        self.duplicates = 0

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        # A digest per slot, not the record: a resumed run keeps no transcripts in memory.
        seen: dict[EpisodeSlot, tuple[int, bytes]] = {}
        for number, record in iter_numbered(self.path, repair=self.repair):
            try:
                slot = slot_of(record)
            except (KeyError, TypeError, ValueError) as error:
                raise RunDirError(f"{self.path}: line {number} is not an episode record ({error!r})") from None
            if slot not in self.planned:
                raise RunDirError(
                    f"{self.path}: line {number} holds episode {slot}, which is not in this run's plan "
                    "(another run's or shard's episode); remove it or use another out= directory"
                )
            digest = hashlib.blake2b(json_bytes(record, sort_keys=True), digest_size=16).digest()
            if slot in seen:
                first, first_digest = seen[slot]
                if digest != first_digest:
                    raise RunDirError(
                        f"{self.path}: line {number} holds episode {slot} again, different from line {first}; "
                        "remove the line that is wrong"
                    )
                self.duplicates += 1
                continue
            seen[slot] = (number, digest)
            yield number, record


class EpisodeLog:
    """Append-only episode log with the durability described in the module docstring."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, record: Mapping[str, Any]) -> None:
        view = memoryview(encode_line(record))
        # One write() almost always takes the whole line; the loop only covers the
        # rare short write, and a kill inside it leaves a torn tail that resume repairs.
        with self._naming_the_file():
            while view:
                view = view[os.write(self._fd, view) :]

    def sync(self) -> None:
        with self._naming_the_file():
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            try:
                with self._naming_the_file():
                    os.fsync(fd)
            finally:
                os.close(fd)

    @contextmanager
    def _naming_the_file(self) -> Iterator[None]:
        """OSErrors of calls on the descriptor (a full disk, fsync refused) name the log file."""
        try:
            yield
        except OSError as error:
            if error.filename is not None:
                raise
            raise OSError(error.errno, error.strerror, str(self.path)) from error

    def __enter__(self) -> EpisodeLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def locked(run_dir: Path) -> Iterator[Path]:
    """Create ``run_dir`` if needed and hold its exclusive lock for the block.

    When the block fails before a run file is written, the lock file this call made is
    removed again, and so is a directory it created: a refused run leaves nothing behind.
    """
    run_dir = Path(run_dir)
    created = not run_dir.exists()
    lock_created = not (run_dir / LOCK).exists()
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        lock = open(run_dir / LOCK, "a")
    except FileExistsError:
        raise RunDirError(f"{run_dir}: exists and is not a directory; out= must name a run directory") from None
    except OSError as error:
        raise RunDirError(f"{run_dir}: cannot use as a run directory ({error.strerror or error})") from None
    with lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunDirError(f"{run_dir} is in use by another ragen-bench process") from None
        # Temp files of a writer killed before its rename; holding the lock, no one
        # else can be writing them.
        for stale in run_dir.glob(".*.tmp"):
            stale.unlink()
        try:
            yield run_dir
        except BaseException:
            if lock_created and not any((run_dir / name).exists() for name in (MANIFEST, EPISODES, SUMMARY)):
                (run_dir / LOCK).unlink(missing_ok=True)
                if created and not any(run_dir.iterdir()):
                    run_dir.rmdir()
            raise
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def write_episodes(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Write a whole episode log at once (for merges), atomically."""
    replace_atomically(path, lambda handle: handle.writelines(map(encode_line, records)))
