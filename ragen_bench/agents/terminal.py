"""A person's terminal, for the ``human`` agent: keys and lines in, the episode's text out.

:class:`Keyboard` reads one file descriptor (stdin) through one byte buffer, either as
keys (the terminal in cbreak mode: no echo, no line editing, Ctrl-C still a signal) or as
lines (the terminal as it was: echo and line editing by the terminal itself).  The mode
is switched per read with ``TCSANOW``, so what was typed ahead is kept; the terminal's
settings and the signal handlers are restored by :meth:`Keyboard.close`.  A descriptor
that is no terminal (a pipe) is read the same way, without any mode switch.

Stopping: Ctrl-C (SIGINT), a closed terminal (SIGHUP), SIGTERM and the end of input each
raise :class:`~ragen_bench.chat.protocol.AgentStopped`, at once while a read waits and
at the next read otherwise: a signal never interrupts the episode log being written.

:class:`Screen` writes with ``rich`` (a panel per observation) when it is installed and
the output is a terminal, plain text otherwise.  A write that fails (the terminal is
gone) is dropped: the run still ends cleanly and keeps its episodes.
"""

from __future__ import annotations

import os
import select
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from ragen_bench.chat.protocol import AgentStopped

# Key names read_key returns besides single printable characters.
UP, DOWN, LEFT, RIGHT = "up", "down", "left", "right"
ENTER, BACKSPACE, OTHER = "enter", "backspace", "other"
ARROWS = (UP, DOWN, LEFT, RIGHT)
_ARROWS = {b"A": UP, b"B": DOWN, b"C": RIGHT, b"D": LEFT}
_ESC = 0x1B
# A lone ESC is the Escape key unless the rest of a sequence follows within this time.
_ESCAPE_WAIT_S = 0.05
_READ_BYTES = 4096
# A line longer than this is kept cut (the reply limit is far below): a pasted megabyte
# cannot grow the buffer without bound.
MAX_LINE_BYTES = 65536
_STOP_SIGNALS = {
    signal.SIGINT: "interrupted (Ctrl-C)",
    signal.SIGHUP: "the terminal was closed",
    signal.SIGTERM: "terminated",
}


def split_keys(data: bytes) -> tuple[list[str], bytes]:
    """The keys in ``data``, and the unfinished escape sequence at its end (to complete with the next read).

    Arrows come as ``ESC [ A`` or ``ESC O A`` (either cursor-key mode); any other escape
    sequence, control byte or non-ASCII character (its UTF-8 continuation bytes included)
    is one :data:`OTHER` key.  Never raises.
    """
    keys: list[str] = []
    index, end = 0, len(data)
    while index < end:
        byte = data[index]
        if byte == _ESC:
            size = _escape_length(data, index)
            if size == 0:
                return keys, data[index:]
            sequence = data[index : index + size]
            keys.append(_ARROWS.get(sequence[-1:], OTHER) if size == 3 and sequence[1:2] in (b"[", b"O") else OTHER)
            index += size
            continue
        index += 1
        if byte in (0x0D, 0x0A):
            keys.append(ENTER)
        elif byte in (0x7F, 0x08):
            keys.append(BACKSPACE)
        elif 0x20 <= byte < 0x7F:
            keys.append(chr(byte))
        else:
            while byte >= 0x80 and index < end and 0x80 <= data[index] < 0xC0:
                index += 1  # the rest of one UTF-8 character
            keys.append(OTHER)
    return keys, b""


def _escape_length(data: bytes, start: int) -> int:
    """Bytes of the escape sequence at ``start`` (``ESC [ params final``, ``ESC O x``, ``ESC x``); 0 if cut short."""
    if start + 1 >= len(data):
        return 0
    kind = data[start + 1]
    if kind == ord("O"):
        return 3 if start + 2 < len(data) else 0
    if kind != ord("["):
        return 2
    index = start + 2
    while index < len(data):
        if 0x40 <= data[index] <= 0x7E:  # the final byte of a control sequence
            return index - start + 1
        index += 1
    return 0


def printable(text: str, limit: int = 40) -> str:
    """``text`` safe to echo in a one-line hint: control characters escaped, cut to ``limit``."""
    shown = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text[:limit])
    return shown + ("..." if len(text) > limit else "")


class Keyboard:
    """Keys or lines from ``fd`` (see the module docstring)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = b""
        self._pending_keys: list[str] = []
        self._stop: str | None = None
        self._waiting = False
        self._saved_mode: list[Any] | None = None
        self._saved_handlers: dict[int, Any] = {}
        self._opened = False

    def _open(self) -> None:
        """Save the terminal's mode and take the stop signals (once, at the first read)."""
        if self._opened:
            return
        self._opened = True
        if os.isatty(self.fd):
            import termios

            self._saved_mode = termios.tcgetattr(self.fd)
        try:
            for number in _STOP_SIGNALS:
                self._saved_handlers[number] = signal.signal(number, self._on_signal)
        except ValueError:  # not the main thread: signals keep their default effect
            self._saved_handlers.clear()

    def _on_signal(self, number: int, frame: Any) -> None:
        self._stop = self._stop or _STOP_SIGNALS[number]
        if self._waiting:
            raise AgentStopped(self._stop)

    def close(self) -> None:
        """Give the terminal back as it was, and the signals their old handlers."""
        if self._saved_mode is not None:
            import termios

            try:
                termios.tcsetattr(self.fd, termios.TCSANOW, self._saved_mode)
            except termios.error:  # the terminal is gone
                pass
            self._saved_mode = None
        for number, handler in self._saved_handlers.items():
            signal.signal(number, handler)
        self._saved_handlers.clear()

    @contextmanager
    def _reading(self, keys: bool) -> Iterator[None]:
        self._open()
        if self._saved_mode is not None:
            import termios
            import tty

            try:
                if keys:
                    tty.setcbreak(self.fd, termios.TCSANOW)
                else:
                    termios.tcsetattr(self.fd, termios.TCSANOW, self._saved_mode)
            except termios.error:
                raise AgentStopped("the terminal was closed") from None
        if self._stop is not None:
            raise AgentStopped(self._stop)
        self._waiting = True
        try:
            yield
        finally:
            self._waiting = False

    def _fill(self, timeout: float | None = None) -> bool:
        """Read more bytes into the buffer; False when none came within ``timeout``. End of input stops."""
        if timeout is not None and not select.select([self.fd], [], [], timeout)[0]:
            return False
        try:
            data = os.read(self.fd, _READ_BYTES)
        except OSError:  # EIO: the terminal was hung up
            data = b""
        if not data:
            raise AgentStopped("end of input")
        self._buffer += data
        return True

    def read_key(self) -> str:
        """The next key: a printable character or one of the key names of this module."""
        with self._reading(keys=True):
            keys, self._buffer = split_keys(self._buffer)  # a line read may have left bytes
            self._pending_keys += keys
            while not self._pending_keys:
                # What split_keys leaves in the buffer is an escape sequence cut short by a read.
                if self._buffer and not self._fill(_ESCAPE_WAIT_S):
                    self._buffer = b""
                    self._pending_keys.append(OTHER)  # Escape alone, or a sequence that never finished
                    break
                if not self._buffer:
                    self._fill()
                keys, self._buffer = split_keys(self._buffer)
                self._pending_keys += keys
            return self._pending_keys.pop(0)

    def read_line(self) -> str:
        """The next line, without its line break (invalid UTF-8 replaced, cut to :data:`MAX_LINE_BYTES`)."""
        self._pending_keys.clear()  # keys typed for the key prompt do not become an answer
        with self._reading(keys=False):
            while b"\n" not in self._buffer:
                if len(self._buffer) > MAX_LINE_BYTES:
                    self._buffer = self._buffer[:MAX_LINE_BYTES]
                try:
                    self._fill()
                except AgentStopped:
                    if not self._buffer:
                        raise
                    self._buffer += b"\n"  # a last line without its line break
            line, _, self._buffer = self._buffer.partition(b"\n")
        return line[:MAX_LINE_BYTES].decode("utf-8", errors="replace").rstrip("\r")


class Screen:
    """Output to a person: panels with ``rich`` on a terminal, plain text otherwise."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._console = None
        if _isatty(out):
            try:
                from rich.console import Console
            except ImportError:
                pass
            else:
                self._console = Console(file=out, highlight=False, soft_wrap=False)

    def panel(self, title: str, body: str) -> None:
        """An observation (or a final state) under a title."""
        if self._console is not None:
            from rich.panel import Panel
            from rich.text import Text

            self._guard(lambda: self._console.print(Panel(Text(body), title=Text(title), title_align="left")))
        else:
            self.line(f"== {title} ==\n{body.rstrip()}\n")

    def line(self, text: str) -> None:
        """One line of text (a status, a hint), as is."""
        self._guard(lambda: (self.out.write(text + "\n"), self.out.flush()))

    def _guard(self, write: Any) -> None:
        try:
            write()
        except (OSError, ValueError):  # the terminal is gone (EIO), or stdout was closed
            pass


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def standard_streams() -> tuple[Keyboard, Screen]:
    """The keyboard on stdin and the screen on stdout."""
    return Keyboard(sys.stdin.fileno()), Screen(sys.stdout)
