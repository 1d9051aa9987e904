"""The sandbox against hostile programs: each attack is contained and reported plainly."""

from __future__ import annotations

import os
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ragen_bench.sandbox import Limits, SandboxUnavailable, probe, run_python
from ragen_bench.sandbox import linux, run

pytestmark = pytest.mark.skipif(probe() is not None, reason=f"no sandbox here: {probe()}")
FAST = Limits(wall_s=2.0, cpu_s=1)


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(entry.name))
        except OSError:  # a process that ended while listed
            continue
    return found


def test_a_plain_program_runs_with_the_standard_library_and_stdin() -> None:
    outcome = run_python("import sys, math\nprint(math.factorial(5), sys.stdin.read())", stdin=b"fed")
    assert (outcome.status, outcome.code, outcome.stdout, outcome.stderr) == ("exited", 0, "120 fed\n", "")
    assert outcome.ok


def test_fork_bomb_is_held_to_the_process_limit_and_ended() -> None:
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    assert run_python(bomb, limits=FAST).status == "timeout"
    failing = run_python("import os\nfor _ in range(100):\n    os.fork()\n", limits=FAST)
    assert failing.code == 1 and failing.stderr.rstrip().endswith("BlockingIOError: [Errno 11] Resource temporarily unavailable")


def test_an_infinite_loop_times_out() -> None:
    outcome = run_python("while True:\n    pass\n", limits=FAST)
    assert (outcome.status, outcome.code) == ("timeout", None)


def test_sleeping_past_the_deadline_times_out() -> None:
    assert run_python("import time\ntime.sleep(60)\n", limits=FAST).status == "timeout"
    # with its output closed, so only the deadline can tell
    assert run_python("import os, time\nos.close(1)\nos.close(2)\ntime.sleep(60)\n", limits=FAST).status == "timeout"


def test_huge_output_is_cut_at_the_cap_and_the_run_killed() -> None:
    limits = Limits(output_bytes=10_000)
    outcome = run_python("while True:\n    print('x' * 1000)\n", limits=limits)
    assert outcome.status == "output-limit"
    assert len(outcome.stdout) <= 10_000


def test_a_memory_bomb_gets_memory_error() -> None:
    outcome = run_python("x = bytearray(8 * 1024**3)\n")
    assert outcome.code == 1 and outcome.stderr.rstrip().endswith("MemoryError")


def test_the_users_files_are_not_there(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2")
    for path in (secret, Path.home() / ".bashrc", Path(__file__)):
        outcome = run_python(f"print(open({str(path)!r}).read())\n")
        assert outcome.code == 1 and "FileNotFoundError" in outcome.stderr, path
        assert "hunter2" not in outcome.stdout
    listing = run_python("import os\nprint(sorted(os.listdir('/')))\n").stdout
    assert "home" not in listing and "proc" not in listing and "work" not in listing


def test_writing_outside_scratch_fails_and_scratch_works(tmp_path: Path) -> None:
    target = tmp_path / "planted.txt"
    outside = run_python(f"open({str(target)!r}, 'w').write('x')\n")
    assert outside.code == 1 and not target.exists()
    system = run_python("open('/usr/planted', 'w').write('x')\n")
    assert "Read-only file system" in system.stderr and not Path("/usr/planted").exists()
    inside = run_python("open('/tmp/note', 'w').write('kept')\nprint(open('/tmp/note').read())\n")
    assert inside.stdout == "kept\n"


def test_file_size_is_limited() -> None:
    outcome = run_python("open('/tmp/big', 'w').write('x' * (4 << 20))\n", limits=Limits(file_bytes=1 << 20))
    assert outcome.code == 1 and "File too large" in outcome.stderr


def test_no_network_not_even_the_hosts_loopback() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        outcome = run_python(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)\n")
    assert outcome.code == 1 and "Network is unreachable" in outcome.stderr


def test_it_cannot_kill_its_parent() -> None:
    attack = (f"import os, signal\nprint(os.getppid())\nos.kill(-1, signal.SIGKILL)\n"
              f"os.kill({os.getpid()}, signal.SIGKILL)\n")
    outcome = run_python(attack)
    # Process 1 of its namespace is the sandbox's init; the caller's pid does not exist inside.
    assert outcome.stdout == "1\n" and "ProcessLookupError" in outcome.stderr


def test_no_process_outlives_the_run() -> None:
    marker = "4242.1717"
    escape = f"import os\nif os.fork() == 0:\n    os.setsid()\n    os.execv('/usr/bin/sleep', ['sleep', '{marker}'])\n"
    assert run_python(escape + "import time\ntime.sleep(0.3)\n").ok
    assert _processes_with(marker) == []
    assert run_python(escape + "import time\ntime.sleep(60)\n", limits=FAST).status == "timeout"
    assert _processes_with(marker) == []


def test_outcomes_carry_no_host_details() -> None:
    program = "import os\nprint(os.getpid(), os.getcwd())\nraise ValueError({'x', 'y', 'z'})\n"
    first, second = run_python(program), run_python(program)
    assert first == second and first.stdout == "2 /tmp\n"


ATTACKS_AS_A_USER = (
    "import os, socket\nprint(os.getuid(), sorted(os.listdir('/')))\n"
    "for path in ({secret!r}, '/root/.bashrc', '/proc/1/environ'):\n"
    "    try:\n        open(path)\n    except OSError as error:\n        print(type(error).__name__)\n"
    "try:\n    open('/usr/planted', 'w')\nexcept OSError as error:\n    print(error.strerror)\n"
    "try:\n    socket.create_connection(('127.0.0.1', 22), timeout=1)\nexcept OSError as error:\n    print(error.strerror)\n"
)


def test_a_users_sandbox_is_the_same_view_in_a_user_namespace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Root's way in is tested above when the tests run as root; this takes the way a user's run takes.
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2")
    monkeypatch.setattr(linux, "runs_as_root", lambda: False)
    outcome = run_python(ATTACKS_AS_A_USER.format(secret=str(secret)))
    lines = outcome.stdout.splitlines()
    uid, listing = lines[0].split(" ", 1)
    assert uid == "1000" and "usr" in listing and not {"home", "proc", "work", "sys"} & set(_names(listing))
    assert lines[1:] == ["FileNotFoundError"] * 3 + ["Read-only file system", "Network is unreachable"]


def _names(listing: str) -> list[str]:
    """The names of a printed list of strs, read without evaluating it."""
    return [name.strip(" '") for name in listing.strip("[]").split(",")]


def test_where_namespaces_are_missing_it_refuses_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(linux, "supported", lambda: "namespaces are Linux-only (this is testos)")
    with pytest.raises(SandboxUnavailable, match="Linux-only.*allow_unconfined=True"):
        run_python("print(1)")
    assert run_python("print(1)", allow_unconfined=True).stdout == "1\n"


def test_a_failed_setup_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object) -> object:
        def preexec() -> None:
            os.write(2, f"{linux.SETUP_MARK} unshare: Operation not permitted\n".encode())
            os._exit(linux.SETUP_FAILED)
        return preexec

    monkeypatch.setattr(run.linux, "enter", broken)
    with pytest.raises(SandboxUnavailable, match="Operation not permitted.*user namespaces"):
        run_python("print(1)")


def test_stdin_is_held_to_one_pipe() -> None:
    with pytest.raises(ValueError, match="at most 65536"):
        run_python("pass", stdin=b"x" * (run.MAX_STDIN + 1))


def test_the_process_limit_is_each_runs_own() -> None:
    # A run near its limit (28 children, itself and the sandbox's own processes: the limit counts them
    # all) does not stop another run's forks: each run counts
    # in its own user namespace, also when root's runs all become the same host user.
    hog = ("import os, time\nfor _ in range(28):\n    if os.fork() == 0:\n        time.sleep(4)\n        os._exit(0)\n"
           "print('held')\ntime.sleep(4)\n")
    other = ("import os\nfor _ in range(8):\n    pid = os.fork()\n    if pid == 0:\n        os._exit(0)\n"
             "    os.waitpid(pid, 0)\nprint('forked')\n")
    with ThreadPoolExecutor(1) as pool:
        held = pool.submit(run_python, hog, limits=Limits(wall_s=10))
        time.sleep(1.5)  # lets the hog reach its limit first
        assert run_python(other).stdout == "forked\n"
        assert held.result().stdout == "held\n"
