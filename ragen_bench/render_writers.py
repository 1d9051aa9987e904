"""The writers behind ``ragen-bench render`` (:mod:`ragen_bench.render`): an animated GIF or an MP4
written frame by frame, and the temp-file-then-rename that leaves an earlier file untouched on failure.

Pillow writes the GIF; imageio with imageio-ffmpeg the MP4 (the ``render`` extra).  Both are
imported only when a writer is made.
"""

from __future__ import annotations

import os
import struct
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ragen_bench import runfiles

FPS = 2  # frames a second: a step can be read before the next
# Video encoders want sides that are multiples of 16; frames are padded to them.
BLOCK = 16


class RenderError(ValueError):
    """The episode cannot be rendered as asked (no such episode, a replay mismatch, a missing package)."""


def open_writer(path: Path, canvas: tuple[int, int]) -> _GifWriter | _Mp4Writer:
    """A writer for ``path``'s format: ``append(picture)``, ``finish()`` once all are in, then ``close()``."""
    return _GifWriter(path, canvas) if path.suffix.lower() == ".gif" else _Mp4Writer(path)


class _GifWriter:
    """An animated GIF written frame by frame, each frame with its own palette.

    Pillow's and imageio's GIF writers keep every frame until the file is closed; this
    one holds only the previous frame, to write just the rectangle that changed.
    """

    def __init__(self, path: Path, canvas: tuple[int, int]) -> None:
        self.handle = open(path, "wb")
        self.previous: np.ndarray | None = None
        height, width = canvas
        # Logical screen of the canvas size, no global colour table (every frame brings its
        # own), then the NETSCAPE2.0 application extension: loop forever.
        self.handle.write(b"GIF89a" + struct.pack("<HHBBB", width, height, 0, 0, 0)
                          + b"!\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00")

    def append(self, picture: np.ndarray) -> None:
        from PIL import GifImagePlugin, Image

        top, left, bottom, right = _changed(self.previous, picture)
        self.previous = picture
        # Fast octree: median cut costs ~35 ms a frame and these frames have few colours.
        patch = Image.fromarray(picture[top:bottom, left:right]).quantize(256, method=Image.Quantize.FASTOCTREE)
        # disposal 1: the patch is drawn over the frame before, which stays.
        for chunk in GifImagePlugin.getdata(patch, offset=(left, top), duration=1000 // FPS, disposal=1,
                                            include_color_table=True):
            self.handle.write(chunk)

    def finish(self) -> None:
        self.handle.write(b";")  # the GIF trailer
        self.handle.flush()
        os.fsync(self.handle.fileno())

    def close(self) -> None:
        self.handle.close()


def _changed(previous: np.ndarray | None, picture: np.ndarray) -> tuple[int, int, int, int]:
    """``(top, left, bottom, right)`` of the pixels that differ from ``previous`` (all of the first frame).

    An unchanged frame still gets a one-pixel patch: it must stay a frame of its own.
    """
    if previous is None:
        return 0, 0, picture.shape[0], picture.shape[1]
    rows, columns = np.nonzero((previous != picture).any(axis=2))
    if rows.size == 0:
        return 0, 0, 1, 1
    return int(rows.min()), int(columns.min()), int(rows.max()) + 1, int(columns.max()) + 1


class _Mp4Writer:
    """imageio's ffmpeg writer: frames are piped to ffmpeg as they come."""

    def __init__(self, path: Path) -> None:
        import imageio.v2 as imageio

        # ffmpeg's own log stays off the terminal: a failure reaches the user as one line (write_atomically).
        self.writer = imageio.get_writer(path, format="FFMPEG", mode="I", fps=FPS, macro_block_size=BLOCK,
                                         ffmpeg_log_level="quiet")

    def append(self, picture: np.ndarray) -> None:
        self.writer.append_data(picture)

    def finish(self) -> None:
        self.writer.close()  # ffmpeg writes the file's index when its input ends

    def close(self) -> None:
        self.writer.close()


def write_atomically(target: Path, write: Callable[[Path], int]) -> int:
    """``write(temp)`` to a temp file beside ``target``, then rename it over ``target``; ``write``'s result.

    On any failure, Ctrl-C included, the temp file is removed and a file already at
    ``target`` is left as it was.  The temp file keeps the suffix: ffmpeg picks the
    container by it.
    """
    folder = target.parent
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=f".part{target.suffix}")
    except OSError as error:
        raise RenderError(f"--out {target}: cannot write in {folder} ({error.strerror or error})") from None
    os.close(fd)
    temp = Path(name)
    try:
        os.chmod(temp, 0o644)  # mkstemp makes 0600; a video is meant to be shared
        count = write(temp)
        os.replace(temp, target)
    except OSError as error:  # a full disk; ffmpeg's pipe reports it as a broken pipe with its command line
        temp.unlink(missing_ok=True)
        reason = error.strerror or str(error).splitlines()[0]
        raise RenderError(f"--out {target}: writing failed ({reason}); {target.name} was not changed") from None
    except BaseException:  # Ctrl-C too
        temp.unlink(missing_ok=True)
        raise
    runfiles.fsync_dir(folder)
    return count
