"""The env's picture beside its text, for vision models (``chat.images=true``).

An id whose env lists ``"rgb_array"`` in its ``metadata["render_modes"]`` draws every state
(``env.unwrapped.render_rgb()``, whatever ``render_mode`` the env was made with).  Under
``chat.images`` the chat layer sends the picture of the current state with each request
(:attr:`ragen_bench.chat.protocol.AgentRequest.image`, a PNG) and records the digest of its
pixels in the turn (:attr:`ragen_bench.chat.trajectory.TurnRecord.image_sha256`), so a replay
that redraws the episode checks the agent was shown what the record says.

The digest covers the pixels and their shape, not the PNG bytes: a zlib of another version may
compress the same picture to other bytes, and the record must verify on any machine.  The PNG
is written here with the standard library only (no Pillow), so the chat layer stays light.
"""

from __future__ import annotations

import base64
import hashlib
import struct
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np

if TYPE_CHECKING:
    from ragen_bench.chat.config import ChatConfig

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def draws_pictures(env: Any) -> bool:
    """Whether ``env`` (wrapped or not) draws its states (``"rgb_array"`` among its render modes)."""
    return "rgb_array" in env.unwrapped.metadata.get("render_modes", ())


def refuse_undrawn(chats: Mapping[str, ChatConfig], env_kwargs: Mapping[str, Any],
                   error: type[Exception] = ValueError) -> None:
    """Raise ``error`` for the first single-agent id of ``chats`` played with ``images`` whose env draws nothing.

    Games are left to their own chat config, which refuses ``images`` (their seats get text only).
    """
    from ragen_bench.registry import ENV_IDS

    for env_id, chat in chats.items():
        if not chat.images or env_id not in ENV_IDS:
            continue
        env = gymnasium.make(env_id, **env_kwargs)
        drawn = draws_pictures(env)
        env.close()
        if not drawn:
            raise error(f"chat.images: {env_id} draws no picture of its states; the ids that do list rgb_array "
                        "among their render modes (ragen-bench envs show ID)")


def picture(env: Any) -> np.ndarray:
    """The current state of ``env`` as a ``uint8`` array ``(height, width, 3)``."""
    pixels = np.asarray(env.unwrapped.render_rgb())
    if pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] != 3:
        raise ValueError(f"{type(env.unwrapped).__name__}.render_rgb() must give uint8 (height, width, 3), "
                         f"got {pixels.dtype} {pixels.shape}")
    return pixels


def pixels_digest(pixels: np.ndarray) -> str:
    """sha256 (hex) of the picture's shape and its pixels, row by row."""
    header = "{}x{}x{}:".format(*pixels.shape).encode()
    return hashlib.sha256(header + np.ascontiguousarray(pixels).tobytes()).hexdigest()


def png_bytes(pixels: np.ndarray) -> bytes:
    """``pixels`` (uint8, height x width x 3) as an 8-bit RGB PNG file."""
    height, width, _ = pixels.shape
    # Each scanline starts with filter type 0 (none); zlib does the compressing.
    rows = np.concatenate([np.zeros((height, 1), np.uint8), np.ascontiguousarray(pixels).reshape(height, -1)], axis=1)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + _chunk(b"IEND", b"")


def data_url(png: bytes) -> str:
    """A PNG as the ``data:`` URL OpenAI's ``image_url`` content parts carry."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def with_picture(messages: list[dict[str, Any]], png: bytes) -> list[dict[str, Any]]:
    """``messages`` with the last one's text turned into OpenAI content parts: the text, then the picture."""
    last = messages[-1]
    parts = [{"type": "text", "text": last["content"]}, {"type": "image_url", "image_url": {"url": data_url(png)}}]
    return [*messages[:-1], {**last, "content": parts}]


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
