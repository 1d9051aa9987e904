"""``ragen-bench serve --mcp``: the served chat sessions as MCP tools, on mcp 1.x's FastMCP.

The same episodes as the OpenEnv server (:mod:`.openenv.server`), through the same session layer
(:class:`~.openenv.session.ChatSession`): this module only keeps a pool of sessions by id and turns
each call into one session call.  Tools, each with a typed (pydantic) result, so an MCP client gets
``structuredContent`` and an output schema beside the JSON text:

* ``reset(env_id?, seed?, split?, index?, session?)`` -> :class:`ResetResult`: opens a session (or
  starts a new episode in ``session``) by seed or by panel item; the session id, the prompt;
* ``step(session, action)`` -> :class:`StepResult`: plays ``action`` (the model's whole reply)
  as ``ragen-bench eval`` plays it; the next turn's text, the turn's reward, done, success, valid;
* ``state(session)`` -> :class:`StateResult`; ``close(session)`` -> :class:`Closed`;
  ``list_envs()`` -> :class:`EnvList`.

Every refused call (:class:`~.openenv.session.ServeError`: an unknown session, step before reset or
after the end, a bad seed, split, index or id, a reply that is no text, one session too many) is an
MCP tool error (``isError``) whose one line of text is ``<tool>: <reason>``; the server goes on.
So is an argument of the wrong JSON type or a missing one (``<tool>: bad arguments: ...``) and one
the tool does not take (:class:`RagenMCP`).  Sessions are bounded (``max_sessions``) and one silent
for ``idle_timeout_s`` is closed at the next call that reaches the server.  The tools run on the
server's event loop, one at a time.

Binds to 127.0.0.1 unless told otherwise: the server has no authentication, and a session id is
the only key to a session (random, 64 bits).
"""

from __future__ import annotations

import inspect
import secrets
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError
from starlette.responses import JSONResponse

from ragen_bench import panels
from ragen_bench.games.registry import GAME_IDS
from ragen_bench.integrations.openenv.session import ChatSession, ServeError, Step, panel_size, served_ids

if TYPE_CHECKING:
    from mcp.types import ContentBlock
    from starlette.requests import Request

# The largest HTTP request body read: a reply of MAX_REPLY_CHARS characters, each escaped in JSON
# (6 bytes at most), and its JSON-RPC envelope fit.
MAX_REQUEST_BYTES = 1 << 20
# How much of a client's unknown session id an error message echoes.
_ECHO_CHARS = 40

INSTRUCTIONS = (
    "Text-game episodes of ragen-bench, played exactly as `ragen-bench eval` plays them. Call reset "
    "(a seed, or a panel item: split and index) to get a session id and the prompt; answer each "
    "observation with step(session, action), where action is the whole reply in the format the prompt "
    "asks for (<think>...</think> <answer>...</answer>), until done. list_envs shows the ids and panels."
)


class Message(BaseModel):
    """One chat message of a prompt."""

    role: str = Field(description="system, user or assistant")
    content: str


class ResetResult(BaseModel):
    """A new episode: the session that holds it and its first prompt."""

    session: str = Field(description="the session id: pass it to step, state, close (and reset, to reuse it)")
    env_id: str
    seed: int = Field(description="the episode's seed (for a panel item, that item's seed)")
    split: str | None = Field(description="the panel of the item, when reset by split and index")
    index: int | None = Field(description="the item's index in that panel")
    observation: str = Field(description="the prompt's last message: the first state and what to answer")
    messages: list[Message] = Field(description="the whole prompt, exactly as an eval agent gets it")
    info: dict[str, Any] = Field(
        description="env_id, seed, split, index, turns, actions_left, success (a game: seat, opponent)")


class StepResult(BaseModel):
    """One played turn."""

    session: str
    observation: str = Field(description="the next turn's message (the final state once done)")
    reward: float = Field(description="the turn's reward: its env rewards plus the format penalty")
    done: bool = Field(description="terminated or truncated: reset for a new episode")
    terminated: bool = Field(description="the env ended the episode (solved, lost, game over)")
    truncated: bool = Field(description="a budget ended it (turns, actions, the env's step limit)")
    success: bool
    valid: bool = Field(description="the reply was well formed and named valid actions (else the format penalty)")
    turns: int = Field(description="turns played in this episode")
    info: dict[str, Any] = Field(
        description="the turn's parsed_actions, action_ids, env_rewards, format_penalty, env_info, ...")


class StateResult(BaseModel):
    """Where a session stands."""

    session: str
    env_id: str | None = Field(description="the episode's id (null before the first reset)")
    seed: int | None = None
    split: str | None = None
    index: int | None = None
    turns: int
    done: bool
    messages: list[Message] = Field(
        description="the next prompt (the whole transcript once done; empty before a reset)")


class Closed(BaseModel):
    """A closed session."""

    session: str
    closed: bool


class EnvEntry(BaseModel):
    """One served id."""

    env_id: str
    game: bool = Field(description="a game: the client plays one seat, the default scripted opponent each other seat")
    splits: dict[str, int] = Field(description="panel name -> item count (indexes 0..count-1)")


class EnvList(BaseModel):
    """What this server serves and its session bounds."""

    envs: list[EnvEntry] = Field(description="the served ids; the first is reset's default")
    sessions_open: int
    max_sessions: int
    idle_timeout_s: float | None = Field(description="a session silent this long is closed (null: never)")


@dataclass
class _Held:
    session: ChatSession
    last: Step | None
    used_at: float


class SessionPool:
    """The open sessions of one server, by id: at most ``max_sessions``; idle ones closed at the next call."""

    def __init__(self, env_ids: Sequence[str], *, max_sessions: int, idle_timeout_s: float | None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
            raise ServeError(f"max_sessions must be an int >= 1, got {max_sessions!r}")
        if idle_timeout_s is not None and not idle_timeout_s > 0:
            raise ServeError(f"idle_timeout_s must be > 0 or None, got {idle_timeout_s!r}")
        self.env_ids = tuple(env_ids)
        self.max_sessions, self.idle_timeout_s, self._clock = max_sessions, idle_timeout_s, clock
        self._held: dict[str, _Held] = {}

    def __len__(self) -> int:
        return len(self._held)

    def open(self) -> str:
        """A new session's id; refused when ``max_sessions`` are open (after closing idle ones)."""
        self.reap()
        if len(self._held) >= self.max_sessions:
            idle = "" if self.idle_timeout_s is None else f" (or one idle for {self.idle_timeout_s:g} s is)"
            raise ServeError(f"too many sessions: this server holds at most {self.max_sessions}; "
                             f"a slot frees when one is closed{idle}")
        session_id = secrets.token_hex(8)
        self._held[session_id] = _Held(ChatSession(self.env_ids), None, self._clock())
        return session_id

    def get(self, session_id: str) -> _Held:
        """The open session ``session_id`` (its idle time starts again)."""
        self.reap()
        held = self._held.get(session_id)
        if held is None:
            raise ServeError(self._unknown(session_id))
        held.used_at = self._clock()
        return held

    def close(self, session_id: str) -> None:
        self.reap()
        held = self._held.pop(session_id, None)
        if held is None:
            raise ServeError(self._unknown(session_id))
        held.session.close()

    def reap(self) -> None:
        """Close every session idle for ``idle_timeout_s``."""
        if self.idle_timeout_s is None:
            return
        cutoff = self._clock() - self.idle_timeout_s
        for session_id in [session_id for session_id, held in self._held.items() if held.used_at <= cutoff]:
            self._held.pop(session_id).session.close()

    def close_all(self) -> None:
        for held in self._held.values():
            held.session.close()
        self._held.clear()

    def _unknown(self, session_id: str) -> str:
        shown = session_id if len(session_id) <= _ECHO_CHARS else session_id[:_ECHO_CHARS] + "..."
        idle = "" if self.idle_timeout_s is None else f", or after {self.idle_timeout_s:g} s idle"
        return f"unknown session {shown!r}: reset opens one (a session ends with close{idle})"


def _messages(step: Step | None) -> list[Message]:
    return [] if step is None else [Message(role=m["role"], content=m["content"]) for m in step.messages]


def _observation(step: Step) -> str:
    return step.messages[-1]["content"]


# Tool arguments, each with the description a client shows.
SessionArg = Annotated[str, Field(description="the session id reset returned")]
ResetSession = Annotated[str | None, Field(
    description="an open session to start the new episode in (default: open a new one)")]
EnvIdArg = Annotated[str | None, Field(description="one of the served ids (list_envs); default the first")]
# Strict ints: a bool or a numeric string is no seed (the session's own rule).
SeedArg = Annotated[int | None, Field(strict=True, description="the episode's seed; or give split and index instead")]
SplitArg = Annotated[str | None, Field(description="a panel (train, val, test) to take the episode from, with index")]
IndexArg = Annotated[int | None, Field(strict=True, description="the panel item's index, with split")]
ActionArg = Annotated[str, Field(description="the model's whole reply, e.g. '<think>...</think> <answer>Up</answer>'")]


class RagenTools:
    """The tools' bodies over one :class:`SessionPool`; FastMCP builds each tool's schemas from its signature."""

    def __init__(self, pool: SessionPool) -> None:
        self.pool = pool

    def reset(self, env_id: EnvIdArg = None, seed: SeedArg = None, split: SplitArg = None, index: IndexArg = None,
              session: ResetSession = None) -> ResetResult:
        """Start an episode by seed or by panel item (split and index); returns the session id and the prompt."""
        opened = session is None
        session_id = self.pool.open() if opened else session
        held = self.pool.get(session_id)
        try:
            step = held.session.reset(env_id=env_id, seed=seed, split=split, index=index)
        except ServeError:
            if opened:  # a refused reset leaves no session behind
                self.pool.close(session_id)
            elif not held.session.started:  # the refusal came after the old episode was dropped
                held.last = None
            raise
        held.last = step
        info = step.info
        return ResetResult(session=session_id, env_id=info["env_id"], seed=info["seed"], split=info["split"],
                           index=info["index"], observation=_observation(step), messages=_messages(step), info=info)

    def step(self, session: SessionArg, action: ActionArg) -> StepResult:
        """Play one turn: action is the model's whole reply, parsed as `ragen-bench eval` parses it."""
        held = self.pool.get(session)
        step = held.session.step(action)
        held.last = step
        info = step.info
        return StepResult(session=session, observation=_observation(step), reward=step.reward, done=step.done,
                          terminated=step.terminated, truncated=step.truncated, success=bool(info["success"]),
                          valid=bool(info["valid"]), turns=info["turns"], info=info)

    def state(self, session: SessionArg) -> StateResult:
        """Where a session stands: its episode, turns played, done, and the current prompt."""
        held = self.pool.get(session)
        return StateResult(session=session, **held.session.state(), messages=_messages(held.last))

    def close(self, session: SessionArg) -> Closed:
        """Close a session and free its slot."""
        self.pool.close(session)
        return Closed(session=session, closed=True)

    def list_envs(self) -> EnvList:
        """The served ids (the first is reset's default), their panels, and the session bounds."""
        envs = [EnvEntry(env_id=env_id, game=env_id in GAME_IDS,
                         splits={split: panel_size(env_id, split) for split in panels.available(env_id)})
                for env_id in self.pool.env_ids]
        return EnvList(envs=envs, sessions_open=len(self.pool), max_sessions=self.pool.max_sessions,
                       idle_timeout_s=self.pool.idle_timeout_s)


class RagenMCP(FastMCP):
    """FastMCP whose calls refuse argument names a tool does not take, and say why a call failed in one line.

    (FastMCP itself drops unknown arguments and reports a bad type as pydantic's multi-line text.)
    A refused call's text is ``"<tool>: <reason>"``.
    """

    def __init__(self, tools: RagenTools, **settings: Any) -> None:
        super().__init__("ragen-bench", instructions=INSTRUCTIONS, **settings)
        self.tools = tools
        self._arg_names: dict[str, tuple[str, ...]] = {}
        looks = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
        acts = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)
        for method, annotations in ((tools.reset, acts), (tools.step, acts), (tools.state, looks),
                                    (tools.close, acts), (tools.list_envs, looks)):
            self.add_tool(method, annotations=annotations, structured_output=True)
            self._arg_names[method.__name__] = tuple(inspect.signature(method).parameters)
        self.custom_route("/health", methods=["GET"])(self.health)

    async def health(self, request: Request) -> JSONResponse:
        """``GET /health`` (HTTP only): the server is up; how many sessions it holds."""
        return JSONResponse({"status": "healthy", "sessions_open": len(self.tools.pool)})

    async def call_tool(
        self, name: str, arguments: dict[str, Any],
    ) -> Sequence[ContentBlock] | dict[str, Any] | CallToolResult:
        known = self._arg_names.get(name)
        if known is not None and (unknown := sorted(set(arguments) - set(known))):
            takes = ", ".join(known) or "no arguments"
            raise ToolError(f"{name} takes {takes}; got {', '.join(unknown)}")
        try:
            result = await super().call_tool(name, arguments)
        except ToolError as error:
            cause = error.__cause__
            if isinstance(cause, ServeError):
                raise ToolError(f"{name}: {cause}") from None
            if not isinstance(cause, ValidationError):
                raise
            problems = "; ".join(f"{'.'.join(map(str, problem['loc'])) or 'arguments'}: {problem['msg']}"
                                 for problem in cause.errors(include_url=False))
            raise ToolError(f"{name}: bad arguments: {problems}") from None
        if isinstance(result, tuple):
            # A result already checked by its pydantic model, handed over as a finished CallToolResult:
            # the low-level server would check it again against the output schema, and jsonschema
            # re-checks the schema itself each time (about half of a call's time, measured).
            content, structured = result
            return CallToolResult(content=list(content), structuredContent=structured, isError=False)
        return result


def build_server(names: Sequence[str], *, max_sessions: int = 64, idle_timeout_s: float | None = 600.0,
                 host: str = "127.0.0.1", port: int = 8000, clock: Callable[[], float] = time.monotonic) -> RagenMCP:
    """The MCP server of the ids of ``names`` (ids or suites, see :func:`.openenv.session.served_ids`)."""
    ids = tuple(dict.fromkeys(env_id for name in names for env_id in served_ids(name)))
    tools = RagenTools(SessionPool(ids, max_sessions=max_sessions, idle_timeout_s=idle_timeout_s, clock=clock))
    # json_response: each call's answer is one JSON body rather than an SSE stream (the tools send no
    # progress or log messages mid-call); measured about half the per-call time on loopback.
    return RagenMCP(tools, host=host, port=port, log_level="WARNING", max_request_body_size=MAX_REQUEST_BYTES,
                    json_response=True)


def serve_mcp(names: Sequence[str], *, stdio: bool = False, host: str = "127.0.0.1", port: int = 8000,
              max_sessions: int = 64, idle_timeout_s: float | None = 600.0) -> None:
    """Serve ``names`` as MCP tools until interrupted: streamable HTTP on ``host:port/mcp``, or stdio."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ServeError(f"port must be in 0..65535, got {port!r}")
    server = build_server(names, max_sessions=max_sessions, idle_timeout_s=idle_timeout_s, host=host, port=port)
    where = "stdin/stdout" if stdio else f"http://{host}:{port}/mcp (streamable HTTP)"
    # Over stdio, stdout carries the protocol: the one line goes to stderr.
    print(f"serving {', '.join(names)} as MCP tools (reset, step, state, close, list_envs) on {where}; "
          f"at most {max_sessions} sessions", file=sys.stderr if stdio else sys.stdout, flush=True)
    try:
        server.run("stdio" if stdio else "streamable-http")
    finally:  # envs that hold a process (TextWorld-Express's JVM) end with the server
        server.tools.pool.close_all()
