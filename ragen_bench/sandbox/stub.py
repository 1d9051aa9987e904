"""The sandbox's own first process, run as ``python -S -s -c <this file's text> <python> <limits>``.

It is this project's code, not the user's: it runs inside the namespaces :mod:`.linux` made
(outside the new PID namespace, which only its children enter) and imports the standard library
only.  Its child is process 1 of the PID namespace: a small init that sets itself undumpable and
dies with its parent, forks the untrusted program with its resource limits, reaps every orphan
and exits with the program's status.  When process 1 exits or is killed, the kernel kills every
process left in the namespace, so nothing the program starts (``setsid``, a double fork) outlives
the run; the caller stops a run with SIGTERM to this process, which kills process 1 and exits
once the namespace is gone.  Exit status: the program's, or 128 + the signal that ended it.
"""

import ctypes
import os
import resource
import signal
import sys

PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
PROGRAM_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
               "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"}


def status_code(status: int) -> int:
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def program(python: str, limits: str) -> None:
    cpu, memory, file_size, processes = (int(value) for value in limits.split(","))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
    resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.execve(python, [python, "-S", "-s", "-B", "/tmp/main.py"], PROGRAM_ENV)


def init(python: str, limits: str) -> None:
    libc = ctypes.CDLL(None)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    child = os.fork()
    if child == 0:
        program(python, limits)
    while True:  # process 1 reaps every orphan; it returns when the program itself ends
        pid, status = os.wait()
        if pid == child:
            os._exit(status_code(status))


def main() -> None:
    python, limits = sys.argv[1], sys.argv[2]
    # SIGTERM from the caller (a deadline) kills process 1, and the kernel ends the namespace with it;
    # this process then exits only once that is done, so the caller's wait covers every process.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    first = os.fork()
    if first == 0:
        try:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
            init(python, limits)
        finally:
            os._exit(126)
    signal.signal(signal.SIGTERM, lambda *_: os.kill(first, signal.SIGKILL))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    _, status = os.waitpid(first, 0)
    os._exit(status_code(status))


if __name__ == "__main__":
    main()
