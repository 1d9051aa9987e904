"""A sandbox for untrusted Python (model-written code): a separate process, limited and isolated.

``run_python(source, stdin=..., limits=Limits(...))`` runs the source as ``/tmp/main.py`` under
the same interpreter (with ``-S``: the standard library only) and returns an :class:`Outcome`:
``exited`` with a status, ``timeout`` or ``output-limit``, and the output it wrote.  Nothing of
the source runs in the caller's process.

What is limited (per run, :class:`Limits`): wall-clock time (at the deadline the PID namespace's
init is killed, which ends every process of the run before :func:`run_python` returns), CPU time (``RLIMIT_CPU``), address space (``RLIMIT_AS``: a memory bomb gets a
``MemoryError``), file size (``RLIMIT_FSIZE``), processes (``RLIMIT_NPROC``, counted in the run's own
user namespace, so a fork bomb stops at the limit and other runs keep theirs), captured output (the run is
killed past the cap) and scratch space (a tmpfs of ``scratch_mb``).

What is isolated (Linux, :mod:`.linux`; root not needed: a user needs unprivileged user namespaces):

* **network**: a new network namespace with no interface up: every connection fails, even to
  the host's loopback;
* **files**: a mount namespace whose root is a read-only view of ``/usr``, ``/lib*`` and the
  Python installation, an empty ``/dev`` but for ``null``/``zero``/``random``/``urandom``, and a
  writable, private ``/tmp``; the host's root is detached, so home folders, the project, other
  scratch folders, ``/etc``, ``/proc`` and ``/sys`` do not exist inside;
* **processes**: a PID namespace: the code sees only its own processes (it cannot signal the
  caller), and when the run ends every process it started ends with it, ``setsid`` or not;
* **identity**: id 1000 in a user namespace of its own, with no capabilities once it runs and
  ``no_new_privs``; that id is the user's own on the host, or ``nobody`` when root started it
  (root's processes would be exempt from the process limit); IPC and host name namespaces of its own.

Not done: no seccomp filter (every system call the kernel allows an unprivileged user stays
open) and no Landlock; the read-only view shows the system's own libraries and Python's.
Where the namespaces cannot be made (not Linux; user namespaces disabled, as on Ubuntu 24.04 by
default through AppArmor), :func:`run_python` raises :class:`SandboxUnavailable` naming the cause,
unless the caller opts in with ``allow_unconfined=True``: then only the limits and the
process-group kill apply, in a temporary folder, with the caller's files and network reachable
(and a process that leaves the group with ``setsid`` can outlive the run).
"""

from ragen_bench.sandbox.run import Limits, Outcome, SandboxUnavailable, probe, run_python

__all__ = ["Limits", "Outcome", "SandboxUnavailable", "probe", "run_python"]
