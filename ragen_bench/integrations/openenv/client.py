"""The OpenEnv client of ``ragen-bench serve`` (``openenv``'s ``EnvClient``, over the server's WebSocket).

``RagenClient(base_url=URL)`` is async like every OpenEnv client; ``.sync()`` wraps it.  A
reset or step the server refuses raises :class:`ServerError` with OpenEnv's error code and the
server's one-line message (``EnvClient`` itself raises a bare ``RuntimeError``).
"""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from websockets.exceptions import ConnectionClosed

from ragen_bench.integrations.openenv.server import ChatObservation, ChatState, ReplyAction
from ragen_bench.integrations.openenv.session import ServeError, Step


class ServerError(ServeError):
    """The server refused a request: ``code`` is OpenEnv's (``EXECUTION_ERROR``, ``CAPACITY_REACHED``...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class RagenClient(EnvClient[ReplyAction, ChatObservation, ChatState]):
    """A session on a ``ragen-bench serve`` server: ``reset(seed=...)`` or ``reset(split=..., index=...)``,
    then ``step(ReplyAction(reply=text))``."""

    def _step_payload(self, action: ReplyAction) -> dict[str, Any]:
        return {"reply": action.reply}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[ChatObservation]:
        observation = ChatObservation(**payload["observation"], reward=payload.get("reward"),
                                      done=payload.get("done", False))
        return StepResult(observation=observation, reward=observation.reward, done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> ChatState:
        return ChatState(**payload)

    async def _send_and_receive(self, message: dict[str, Any]) -> dict[str, Any]:
        try:
            await self._send(message)
        except ConnectionClosed:
            # A refused session (CAPACITY_REACHED) gets its error frame and then the close: read the frame.
            pass
        response = await self._receive()
        if response.get("type") == "error":
            data = response.get("data") or {}
            raise ServerError(str(data.get("code", "UNKNOWN")), str(data.get("message", "unknown error")))
        return response


def as_step(observation: ChatObservation) -> Step:
    """The :class:`~.session.Step` an observation carries (what ``RAGEN/Chat-v0`` returns in-process)."""
    return Step(messages=observation.messages, reward=float(observation.reward), terminated=observation.terminated,
                truncated=observation.truncated, info=observation.info)
