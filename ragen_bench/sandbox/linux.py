"""The Linux half of the sandbox: namespaces and the read-only view, set up in the forked child.

:func:`enter` runs in the child between ``fork`` and ``exec`` (``subprocess``'s ``preexec_fn``),
single-threaded, so it may call ``unshare(CLONE_NEWUSER)``.  It leaves the child in new user,
mount, network, PID, IPC and UTS namespaces, with a root file system of its own:

* ``/`` is a small tmpfs, read-only, holding only read-only bind mounts of the system's programs
  and libraries (``/usr``, ``/lib*``, ``/bin``-style links) and of the Python installation;
* ``/dev`` holds only ``null``, ``zero``, ``random`` and ``urandom``;
* ``/tmp`` is the scratch folder: a fresh tmpfs of a bounded size, the only writable place;
* the host's root is detached after ``pivot_root``, so no path leads back to it (home folders,
  the project, ``/proc``, ``/sys``, ``/etc`` and other users' files are simply not there).

Run by a user, the child makes the namespaces inside a new user namespace, where its id is
:data:`SANDBOX_UID` (mapped to the user's own), not 0: its capabilities there end at ``exec``, so
the code it runs cannot remount or ``chroot``.  Run by root, it makes them directly, builds the
view, becomes ``nobody`` (:data:`NOBODY`) with no capabilities, and then enters a user namespace
of its own where it is :data:`SANDBOX_UID` too (see :func:`enter` for why).  Either way
``no_new_privs`` is set.  No ctypes library is loaded here at import time.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MNT_DETACH = 2
PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 4, 38
SANDBOX_UID = 1000
NOBODY = 65534  # the host user a sandbox started by root runs as
# pivot_root has no glibc wrapper: its syscall number per architecture.
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
# statvfs flags a read-only bind must keep: the kernel refuses to drop a locked one inside a user namespace.
_KEPT_FLAGS = (
    (os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
    (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME), (os.ST_RELATIME, MS_RELATIME),
)
DEVICES = ("null", "zero", "random", "urandom")
SETUP_FAILED = 125  # the child's exit status when it could not build the sandbox (message on stderr)
SETUP_MARK = "ragen-sandbox-setup:"


class SetupError(OSError):
    """A namespace or mount step failed in the child."""


def supported() -> str | None:
    """``None`` where this module can work, else why not (the OS or the architecture)."""
    if sys.platform != "linux":
        return f"namespaces are Linux-only (this is {sys.platform})"
    if platform.machine() not in _PIVOT_ROOT:
        return f"no pivot_root syscall number known for {platform.machine()}"
    return None


def runs_as_root() -> bool:
    """Whether the sandbox takes root's way in (see the module docstring)."""
    return os.geteuid() == 0


def read_only_paths(python: Path) -> list[Path]:
    """The host paths the sandbox sees read-only: system programs and libraries, and Python's prefix."""
    paths = [Path(p) for p in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")]
    prefix = Path(sys.base_prefix).resolve()
    paths.append(prefix)
    paths.append(python.parent)
    paths.append(Path("/etc/ld.so.cache"))
    seen: list[Path] = []
    for path in paths:
        if os.path.lexists(path) and not any(path == s or s in path.parents for s in seen):
            seen.append(path)
    return seen


def enter(new_root: str, views: list[Path], scratch_mb: int, files: Mapping[str, bytes]) -> Callable[[], None]:
    """The ``preexec_fn`` that builds the sandbox; on failure the child exits :data:`SETUP_FAILED`.

    A user makes the namespaces in a new user namespace (mapping :data:`SANDBOX_UID` to itself).
    Root makes them directly and builds the view, then becomes :data:`NOBODY` for good and only
    then enters a user namespace of its own (:data:`SANDBOX_UID` mapped to ``nobody``): root's
    processes are exempt from ``RLIMIT_NPROC``, a sandbox mapped to root would own root's files,
    and the user namespace keeps the process count per run (``nobody``'s other processes, other
    sandboxes among them, do not count) and the id the program sees the same as a user's run.
    """
    libc = ctypes.CDLL(None, use_errno=True)  # loaded before the fork: nothing to load in the child
    pivot = _PIVOT_ROOT.get(platform.machine(), -1)
    as_root = runs_as_root()
    uid, gid = (NOBODY, NOBODY) if as_root else (os.geteuid(), os.getegid())
    plan = [(str(view), str(view.resolve()), view.is_symlink() and view.parent == Path("/"), view.resolve().is_dir())
            for view in views]
    scratch = f"size={scratch_mb}m,mode=0700" + (f",uid={NOBODY},gid={NOBODY}" if as_root else "")
    namespaces = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS

    def preexec() -> None:
        try:
            os.setsid()
            _call(libc.unshare, namespaces if as_root else CLONE_NEWUSER | namespaces)
            proc = os.open("/proc/self", os.O_RDONLY | os.O_DIRECTORY)  # the new root has no /proc
            if not as_root:
                _map_ids(proc, uid, gid)
            _build_root(libc, new_root, plan, scratch, files)
            os.chdir(new_root)
            _call(libc.syscall, pivot, b".", b".")
            _call(libc.umount2, b".", MNT_DETACH)
            if as_root:
                os.setgroups([])
                os.setresgid(NOBODY, NOBODY, NOBODY)
                os.setresuid(NOBODY, NOBODY, NOBODY)  # drops every capability
                _call(libc.prctl, PR_SET_DUMPABLE, 1, 0, 0, 0)  # a uid change clears it; the maps need it
                _call(libc.unshare, CLONE_NEWUSER)
                _map_ids(proc, uid, gid)
            os.close(proc)
            _call(libc.prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            os.chdir("/tmp")
        except OSError as error:
            os.write(2, f"{SETUP_MARK} {error}\n".encode())
            os._exit(SETUP_FAILED)

    return preexec


def _build_root(
    libc: ctypes.CDLL, root: str, plan: list[tuple[str, str, bool, bool]], scratch: str, files: Mapping[str, bytes],
) -> None:
    mount = libc.mount
    _call(mount, None, b"/", None, MS_REC | MS_PRIVATE, None)
    _call(mount, b"tmpfs", root.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"size=1m,mode=0755")
    for view, real, link, directory in plan:
        target = root + view
        if link:
            os.symlink(os.readlink(view), target)  # /bin -> usr/bin on merged-/usr systems
            continue
        _make_target(target, directory)
        _bind_read_only(libc, real, target)
    os.mkdir(root + "/dev")
    for device in DEVICES:
        if os.path.exists(f"/dev/{device}"):
            _make_target(f"{root}/dev/{device}", False)
            _call(mount, f"/dev/{device}".encode(), f"{root}/dev/{device}".encode(), None, MS_BIND, None)
    os.mkdir(root + "/tmp")
    _call(mount, b"tmpfs", f"{root}/tmp".encode(), b"tmpfs", MS_NOSUID | MS_NODEV, scratch.encode())
    for name, content in files.items():
        with open(f"{root}/tmp/{name}", "wb") as handle:
            handle.write(content)
    _call(mount, None, root.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None)


def _make_target(target: str, directory: bool) -> None:
    os.makedirs(target if directory else os.path.dirname(target), exist_ok=True)
    if not directory:
        open(target, "wb").close()


def _bind_read_only(libc: ctypes.CDLL, source: str, target: str) -> None:
    _call(libc.mount, source.encode(), target.encode(), None, MS_BIND, None)
    flags = os.statvfs(source).f_flag
    kept = sum(ms for st, ms in _KEPT_FLAGS if flags & st)
    _call(libc.mount, None, target.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept, None)


def _map_ids(proc: int, uid: int, gid: int) -> None:
    """Map :data:`SANDBOX_UID` (and its group) to ``uid``/``gid`` in the new user namespace (``proc``: /proc/self)."""
    for name, text in (("setgroups", "deny"), ("gid_map", f"{SANDBOX_UID} {gid} 1"), ("uid_map", f"{SANDBOX_UID} {uid} 1")):
        handle = os.open(name, os.O_WRONLY, dir_fd=proc)
        try:
            os.write(handle, text.encode())
        finally:
            os.close(handle)


def _call(function: Callable[..., int], *args: object) -> None:
    if function(*args) != 0:
        number = ctypes.get_errno()
        raise SetupError(number, f"{getattr(function, '__name__', 'call')}{args[:2]}: {os.strerror(number)}")
