"""Run one untrusted Python program in the sandbox and say what happened, in words that never vary.

The host side: it makes the scratch root, starts the child through :mod:`.linux` (namespaces,
read-only view) and :mod:`.stub` (PID-namespace init, resource limits), feeds it ``stdin``,
reads its output up to a cap, and stops the run at the wall-clock deadline or the output cap
(every process of its PID namespace ended before it returns).  :class:`Outcome` holds no timings, process ids or paths of the host, so a
program that exits gives the same outcome every time (what :mod:`ragen_bench.leaderboard` replay
needs); one that is killed gives the same status, with whatever output arrived before the kill.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragen_bench.sandbox import linux

STUB = Path(__file__).with_name("stub.py")
MAX_STDIN = 64 << 10
STOP_GRACE_S = 10.0  # how long a stopped run may take to end its namespace before its group is killed
UNCONFINED_HINT = (
    "enable unprivileged user namespaces (sysctl user.max_user_namespaces > 0; on Ubuntu 24.04 "
    "kernel.apparmor_restrict_unprivileged_userns=0), or opt in to running without them "
    "(allow_unconfined=True: resource limits and a process group only, no file or network isolation)"
)


class SandboxUnavailable(OSError):
    """This machine cannot build the sandbox (the message says why and what to do)."""


@dataclass(frozen=True)
class Limits:
    """What one run may use.  ``processes`` counts every process of the run in its user namespace,
    the sandbox's own first ones (its stub and init) included."""

    wall_s: float = 10.0
    cpu_s: int = 5
    memory_bytes: int = 512 << 20
    file_bytes: int = 1 << 20
    processes: int = 32
    output_bytes: int = 64 << 10
    scratch_mb: int = 16


@dataclass(frozen=True)
class Outcome:
    """How a run ended.  ``status``: ``"exited"`` (``code`` is its status, 128 + n for signal n),
    ``"timeout"`` (the wall clock or the CPU limit, which one depending on load: one status for both),
    or ``"output-limit"``.  ``stdout``/``stderr`` are what it wrote, cut at the cap."""

    status: str
    code: int | None
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.status == "exited" and self.code == 0


def run_python(
    program: str, *, stdin: bytes = b"", limits: Limits = Limits(), allow_unconfined: bool = False,
) -> Outcome:
    """Run ``program`` (Python source, as ``/tmp/main.py``) with ``limits``; see the package docstring.

    ``stdin`` is written whole before the output is read, so it is held to one pipe's worth (64 KiB).
    """
    if len(stdin) > MAX_STDIN:
        raise ValueError(f"stdin holds {len(stdin)} bytes; the sandbox takes at most {MAX_STDIN}")
    python = str(Path(sys.executable).resolve())
    files = {"main.py": program.encode("utf-8", "surrogatepass")}
    reason = linux.supported()
    if reason is not None:
        if not allow_unconfined:
            raise SandboxUnavailable(f"the sandbox cannot run here: {reason}; {UNCONFINED_HINT}")
        return _unconfined(python, files, stdin, limits)
    root = tempfile.mkdtemp(prefix="ragen-sandbox-")
    try:
        preexec = linux.enter(root, linux.read_only_paths(Path(python)), limits.scratch_mb, files)
        command = [python, "-S", "-s", "-B", "-c", STUB.read_text(encoding="utf-8"), python, _limit_arg(limits)]
        outcome = _supervise(command, preexec, stdin, limits, cwd="/", confined=True)
    finally:
        os.rmdir(root)
    if outcome.status == "exited" and outcome.code == linux.SETUP_FAILED and linux.SETUP_MARK in outcome.stderr:
        if not allow_unconfined:
            why = outcome.stderr.split(linux.SETUP_MARK, 1)[1].strip()
            raise SandboxUnavailable(f"the sandbox cannot run here ({why}); {UNCONFINED_HINT}")
        return _unconfined(python, files, stdin, limits)
    return outcome


def _limit_arg(limits: Limits) -> str:
    return f"{limits.cpu_s},{limits.memory_bytes},{limits.file_bytes},{limits.processes}"


def _unconfined(python: str, files: dict[str, bytes], stdin: bytes, limits: Limits) -> Outcome:
    """The opt-in fallback: the same limits and process-group kill, in a scratch folder, nothing isolated."""
    scratch = tempfile.mkdtemp(prefix="ragen-sandbox-")
    try:
        for name, content in files.items():
            Path(scratch, name).write_bytes(content)
        program = STUB.read_text(encoding="utf-8").replace('"/tmp/main.py"', repr(f"{scratch}/main.py"))
        command = [python, "-S", "-s", "-B", "-c", program, python, _limit_arg(limits)]
        return _supervise(command, os.setsid, stdin, limits, cwd=scratch, confined=False)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _supervise(
    command: list[str], preexec: Callable[[], None], stdin: bytes, limits: Limits, cwd: str, confined: bool,
) -> Outcome:
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=preexec, cwd=cwd, env={}, close_fds=True,
    )
    deadline = time.monotonic() + limits.wall_s
    try:
        _feed(process, stdin)
        status, out, err = _read(process, limits, deadline)
        if status == "exited":  # its output closed; it may still run (it closed its own stdout and stderr)
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                status = "timeout"
    finally:
        _stop(process, confined)
    code = process.returncode
    if status == "exited" and code == 128 + signal.SIGXCPU:  # RLIMIT_CPU's signal: a timeout like the wall clock's
        status = "timeout"
    text = (out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))
    return Outcome(status, code if status == "exited" else None, *text)


def _feed(process: subprocess.Popen[bytes], stdin: bytes) -> None:
    assert process.stdin is not None
    try:
        process.stdin.write(stdin)
        process.stdin.close()
    except BrokenPipeError:  # the program exited without reading: its outcome says why
        pass


def _read(process: subprocess.Popen[bytes], limits: Limits, deadline: float) -> tuple[str, bytes, bytes]:
    """Read both pipes until they close (``"exited"``), the deadline, or the output cap."""
    chunks: dict[int, bytearray] = {}
    selector = selectors.DefaultSelector()
    for stream in (process.stdout, process.stderr):
        assert stream is not None
        chunks[stream.fileno()] = bytearray()
        selector.register(stream.fileno(), selectors.EVENT_READ)
    status = "exited"
    with selector:
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                status = "timeout"
                break
            for key, _ in selector.select(left):
                data = os.read(key.fd, 65536)
                if not data:
                    selector.unregister(key.fd)
                chunks[key.fd] += data
            if sum(len(chunk) for chunk in chunks.values()) > limits.output_bytes:
                status = "output-limit"
                break
    out, err = (bytes(chunks[s.fileno()][: limits.output_bytes]) for s in (process.stdout, process.stderr))  # type: ignore[union-attr]
    return status, out, err


def _stop(process: subprocess.Popen[bytes], confined: bool) -> None:
    """End the run and reap it.  Confined: SIGTERM asks the stub to kill the namespace's init and to
    exit only when every process of the namespace is gone (SIGKILL to the group if it does not, in
    :data:`STOP_GRACE_S`).  Unconfined: SIGKILL to the process group at once."""
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()
    if process.poll() is not None:
        return
    if confined:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


_PROBED: list[str | None] = []


def probe() -> str | None:
    """``None`` when the sandbox works on this machine, else why not (checked once per process)."""
    if not _PROBED:
        try:
            outcome = run_python("pass")
            _PROBED.append(None if outcome.ok else f"a trivial program failed: {outcome.stderr.strip()[-300:]}")
        except SandboxUnavailable as error:
            _PROBED.append(str(error))
    return _PROBED[0]
