"""``ragen-bench serve``: served ids as an OpenEnv server, built on ``openenv``'s own ``create_app``.

The wire is OpenEnv's: a session is a WebSocket on ``/ws`` (one :class:`ChatSession` per
connection, from the factory), messages ``{"type": "reset"|"step"|"state"|"close", "data": ...}``;
``/health``, ``/schema``, ``/metadata`` and the task API (``/<name>/splits``, ``/<name>/task``...)
over HTTP.  What this project adds, around that app:

* the action is ``{"reply": "<the model's whole reply>"}`` and the observation carries the next
  prompt's ``messages``, ``reward``, ``done``, ``terminated``, ``truncated`` and ``info``
  (:class:`~.session.Step`); ``reset`` takes ``seed`` or ``split`` + ``index`` (a panel item) and,
  for a server of several ids, ``env_id``;
* bounds: a WebSocket message above :data:`MAX_MESSAGE_BYTES` closes that connection (1009, the
  WebSocket code for a message too big), an HTTP body above it gets 413, a reply above
  :data:`~.session.MAX_REPLY_CHARS` characters a validation error; at most ``max_sessions``
  sessions (the next gets OpenEnv's ``CAPACITY_REACHED``); a WebSocket silent for
  ``idle_timeout_s`` is closed (1001) and its session freed;
* a refused request (:class:`~.session.ServeError`) is an error response naming the reason: over
  the WebSocket OpenEnv's ``EXECUTION_ERROR`` with that message, over HTTP a 400 ``{"detail": ...}``;
  the connection and every other session go on; a message holding a lone surrogate (JSON can
  escape one, no UTF-8 text holds one) gets ``VALIDATION_ERROR``.

Binds to 127.0.0.1 unless told otherwise: the server has no authentication.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, ConcurrencyConfig, EnvironmentMetadata, Observation, State
from pydantic import Field

from ragen_bench import panels
from ragen_bench.integrations.openenv.session import MAX_REPLY_CHARS, ChatSession, ServeError, Step, served_ids, task

# The largest WebSocket message or HTTP body read: a reply of MAX_REPLY_CHARS characters in UTF-8
# (4 bytes each at most) and its JSON envelope fit; 10 MB does not.
MAX_MESSAGE_BYTES = 1 << 20
DEFAULT_PORT = 8000
DEFAULT_MAX_SESSIONS = 64
DEFAULT_IDLE_TIMEOUT_S = 600.0
# WebSocket close codes (RFC 6455): the server is going away from this connection.
_CLOSE_IDLE = 1001

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class ReplyAction(Action):
    """One turn: the model's whole reply, parsed exactly as ``ragen-bench eval`` parses it."""

    reply: str = Field(max_length=MAX_REPLY_CHARS, description="the model's reply text, <think>/<answer> and all")


class ChatObservation(Observation):
    """The next prompt and what the last turn earned (``done`` = ``terminated or truncated``)."""

    messages: list[dict[str, str]] = Field(default_factory=list, description="the next turn's prompt (system, user, ...)")
    terminated: bool = Field(default=False, description="the env ended the episode (solved, lost, game over)")
    truncated: bool = Field(default=False, description="a budget ended it (turns, actions, the env's step limit)")
    info: dict[str, Any] = Field(default_factory=dict, description="id, seed, panel item, success, validity, ...")


class ChatState(State):
    """Where a session stands (OpenEnv's ``episode_id`` and ``step_count``, plus the episode)."""

    env_id: str | None = None
    seed: int | None = None
    split: str | None = None
    index: int | None = None
    turns: int = 0
    done: bool = False


class RagenEnvironment(Environment[ReplyAction, ChatObservation, ChatState]):
    """One WebSocket session: a :class:`ChatSession` of the served ids."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_ids: Sequence[str]) -> None:
        super().__init__()
        self._session = ChatSession(env_ids)
        self._episode_id: str | None = None
        self._steps = 0

    def reset(self, seed: Any = None, episode_id: Any = None, env_id: Any = None, split: Any = None,
              index: Any = None, **unknown: Any) -> ChatObservation:
        if unknown:
            raise ServeError(f"reset takes seed, split, index, env_id and episode_id; got {', '.join(sorted(unknown))}")
        if episode_id is not None and not isinstance(episode_id, str):
            raise ServeError(f"episode_id must be a str, got {type(episode_id).__name__}")
        step = self._session.reset(env_id=env_id, seed=seed, split=split, index=index)
        self._episode_id, self._steps = episode_id, 0
        return _observation(step)

    def step(self, action: Any, timeout_s: Any = None, **unused: Any) -> ChatObservation:
        if not isinstance(action, ReplyAction):
            raise ServeError('the action must be {"reply": "<the model\'s reply text>"}')
        observation = _observation(self._session.step(action.reply))
        self._steps += 1
        return observation

    @property
    def state(self) -> ChatState:
        return ChatState(episode_id=self._episode_id, step_count=self._steps, **self._session.state())

    def get_metadata(self) -> EnvironmentMetadata:
        ids = self._session.env_ids
        return EnvironmentMetadata(
            name=", ".join(ids), version="0.1.0",
            description=f"ragen-bench: {', '.join(ids)} played as chats, exactly as `ragen-bench eval` plays them",
        )

    def close(self) -> None:
        self._session.close()

    # -- the task API: panel items of the first served id -----------------------------

    def list_splits(self) -> list[str]:
        return panels.available(self._session.default_id)

    def num_tasks(self, split: str) -> int:
        return len(self.list_tasks(split))

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        return self.get_task_range(split, None, None)

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        return task(self._session.default_id, split, index)

    def get_task_range(self, split: str, start: int | None, stop: int | None) -> list[dict[str, Any]]:
        env_id = self._session.default_id
        if split not in panels.available(env_id):
            raise ServeError(f"split: {env_id} has panels {panels.available(env_id)}, got {split!r}")
        count = len(panels.load(env_id, split).seeds)
        return [task(env_id, split, index) for index in range(count)[start:stop]]


def _observation(step: Step) -> ChatObservation:
    return ChatObservation(messages=step.messages, reward=step.reward, done=step.done, terminated=step.terminated,
                           truncated=step.truncated, info=step.info)


def app_name(names: Sequence[str]) -> str:
    """The server's OpenEnv name (its task routes live under ``/<name>/``): the names without ``RAGEN/``."""
    return "+".join(name.removeprefix("RAGEN/") for name in names)


def build_app(names: Sequence[str], *, max_sessions: int = DEFAULT_MAX_SESSIONS,
              idle_timeout_s: float | None = DEFAULT_IDLE_TIMEOUT_S) -> ASGIApp:
    """The ASGI app serving the ids of ``names`` (ids or suites, see :func:`.session.served_ids`)."""
    if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
        raise ServeError(f"max_sessions must be an int >= 1, got {max_sessions!r}")
    if idle_timeout_s is not None and not idle_timeout_s > 0:
        raise ServeError(f"idle_timeout_s must be > 0 or None, got {idle_timeout_s!r}")
    ids = tuple(dict.fromkeys(env_id for name in names for env_id in served_ids(name)))
    app = create_app(
        functools.partial(RagenEnvironment, ids), ReplyAction, ChatObservation, env_name=app_name(names),
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_timeout_s),
        state_cls=ChatState,
    )
    app.add_exception_handler(ServeError, _refused)
    return _BoundedBodies(_IdleWebSockets(_NoLoneSurrogates(app), idle_timeout_s), MAX_MESSAGE_BYTES)


async def _refused(request: Request, error: Exception) -> JSONResponse:
    return JSONResponse(status_code=400, content={"detail": str(error)})


class _BoundedBodies:
    """An HTTP request body above ``limit`` bytes is answered 413 before the app reads any of it."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.limit:
                await _send_json(send, 413, {"detail": f"request body above {self.limit} bytes"})
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


async def _send_json(send: Send, status: int, content: Any) -> None:
    payload = json.dumps(content).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})


class _IdleWebSockets:
    """A WebSocket whose client sends nothing for ``idle_s`` seconds is closed, and the app told it left.

    OpenEnv's own reaper (``session_timeout``) spares sessions held by a WebSocket; this one covers
    them.  The timer runs only while the app waits for the client, never during a step.
    """

    def __init__(self, app: ASGIApp, idle_s: float | None) -> None:
        self.app, self.idle_s = app, idle_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket" or self.idle_s is None:
            await self.app(scope, receive, send)
            return
        idle_s, opened, closed = self.idle_s, False, False

        async def timed_receive() -> Message:
            nonlocal closed
            if not opened:
                return await receive()
            try:
                return await asyncio.wait_for(receive(), idle_s)
            except asyncio.TimeoutError:
                closed = True
                await send({"type": "websocket.close", "code": _CLOSE_IDLE,
                            "reason": f"idle for {idle_s:g} s: session closed"})
                return {"type": "websocket.disconnect", "code": _CLOSE_IDLE}

        async def guarded_send(message: Message) -> None:
            nonlocal opened
            if closed:
                return
            opened = opened or message["type"] == "websocket.accept"
            await send(message)

        await self.app(scope, timed_receive, guarded_send)


# A JSON escape of a UTF-16 surrogate: only messages holding one can hold a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def lone_surrogate(text: str) -> bool:
    """Whether the JSON ``text`` decodes to a string holding a lone surrogate (no UTF-8 text can)."""
    if not _SURROGATE_ESCAPE.search(text):
        return False
    try:
        json.dumps(json.loads(text), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except (ValueError, RecursionError):  # not JSON: the app answers INVALID_JSON
        return False
    return False


class _NoLoneSurrogates:
    """A WebSocket message whose JSON holds a lone surrogate is answered ``VALIDATION_ERROR`` here.

    OpenEnv's own answer would echo the string back, fail to encode it and drop the session.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return

        async def checked_receive() -> Message:
            while True:
                message = await receive()
                text = message.get("text") if message["type"] == "websocket.receive" else None
                if text is None or not lone_surrogate(text):
                    return message
                await send({"type": "websocket.send", "text": json.dumps({"type": "error", "data": {
                    "message": "Invalid message: a string holds a lone surrogate (not Unicode text)",
                    "code": "VALIDATION_ERROR"}})})

        await self.app(scope, checked_receive, send)


def serve(names: Sequence[str], *, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
          max_sessions: int = DEFAULT_MAX_SESSIONS, idle_timeout_s: float | None = DEFAULT_IDLE_TIMEOUT_S) -> None:
    """Serve ``names`` until interrupted (uvicorn; the WebSocket message bound is :data:`MAX_MESSAGE_BYTES`)."""
    import uvicorn

    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ServeError(f"port must be in 0..65535, got {port!r}")
    app = build_app(names, max_sessions=max_sessions, idle_timeout_s=idle_timeout_s)
    print(f"serving {', '.join(names)} on http://{host}:{port} (sessions on ws://{host}:{port}/ws, "
          f"at most {max_sessions}; task API under /{app_name(names)}/)", flush=True)
    uvicorn.run(app, host=host, port=port, ws_max_size=MAX_MESSAGE_BYTES, log_level="warning")
