"""``openai``: any OpenAI-compatible Chat Completions server (``vllm serve``, hosted APIs).

Requests in a batch go out concurrently (asyncio over one shared ``httpx.AsyncClient``, at
most ``max_concurrency`` in flight).  Each attempt has a whole-request deadline of
``timeout_s`` -- connecting, sending and reading the complete answer -- so a server that
trickles bytes cannot hold a request past it (httpx's own timeouts are per read).

Rate limits (429), server errors (5xx), timeouts and dropped connections are retried with
capped exponential backoff and full jitter, honouring a ``Retry-After`` header.  401/403 fail
at once (retrying cannot fix a key), as do other 4xx answers (the request itself is wrong).
Every failure that ends a request raises :class:`CompletionError`, an
:class:`~ragen_bench.chat.AgentError` naming the URL, the last status and the attempts: a
silently empty reply would be scored as a format failure and bias the benchmark.

A reply whose ``content`` is null (a refusal, a tool call, a content filter) still counts
as a reply, with empty text, but it is not silent: it has ``null_content=True``, the
message's ``refusal`` text if it carried one, and the server's own ``finish_reason``
(``"stop"``, ``"length"``, ``"content_filter"``, ``"tool_calls"``...), as every reply does.

A request with ``tools`` (``chat.action_format=tools``) is sent with them and with
``tool_choice`` (``"required"`` by default: the server must answer by a call; ``"auto"`` lets a
model write text first, on servers that parse tool calls from free text); the reply's
``message.tool_calls`` become :attr:`~ragen_bench.chat.AgentReply.tool_calls`, and a reply that
answers by a call is not a null-content one.  A body whose ``tool_calls`` is no list of objects is
a server fault (retried).

A request with an ``image`` (``chat.images=true``) sends the last user message as OpenAI content
parts: its text, then the picture as an ``image_url`` part holding a ``data:image/png`` URL.

Ctrl-C stops a batch at once: pending requests are cancelled, not awaited.  ``act`` runs its
own event loop, so it must not be called from inside a running one.

The API key is read from an environment variable (``OPENAI_API_KEY`` by default) when the agent
is built and lives only in the HTTP client's headers: it is never part of the agent's name,
settings or replies, so it cannot leak into result files.

httpx is imported only when an agent is built.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragen_bench.agents.sampling import EVAL_SAMPLING, SamplingSettings, request_seed
from ragen_bench.chat.images import with_picture
from ragen_bench.chat.protocol import AgentError, AgentReply, AgentRequest, tool_calls_problem

RETRY_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))
AUTH_STATUSES = frozenset({401, 403})
MAX_ERROR_CHARS = 500  # server error bodies are data: keep what we quote bounded
TOOL_CHOICES = ("required", "auto")


class CompletionError(AgentError):
    """A chat completion failed for good (refused credentials, a non-retryable answer, retries exhausted)."""


@dataclass(frozen=True)
class RetryPolicy:
    """Capped exponential backoff with full jitter: attempt ``k`` waits U(0, min(cap, base * 2**k))."""

    max_retries: int = 5
    base_s: float = 0.5
    cap_s: float = 30.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.base_s <= 0 or self.cap_s <= 0:
            raise ValueError(f"backoff_base_s and backoff_cap_s must be > 0, got {self.base_s} and {self.cap_s}")

    def delay(self, attempt: int, rng: random.Random, retry_after_s: float | None = None) -> float:
        if retry_after_s is not None:  # the server knows best, within our cap
            return min(self.cap_s, max(0.0, retry_after_s))
        return rng.uniform(0.0, min(self.cap_s, self.base_s * 2**attempt))


@dataclass(frozen=True)
class CompletionSettings:
    """What every request asks for.  ``seeded=False`` leaves sampling unseeded on the server."""

    model: str
    sampling: SamplingSettings
    seeded: bool = True
    tool_choice: str = "required"
    # Send eval's episode key in the X-Ragen-Bench-Episode header: ragen-bench's scripted endpoint
    # (integrations/scripted_server.py) needs it; a model server has no use for it, so it is off by default.
    episode_header: bool = False

    def headers(self, request: AgentRequest) -> dict[str, str]:
        return {"X-Ragen-Bench-Episode": request.episode_key} if self.episode_header else {}

    def body(self, request: AgentRequest) -> dict[str, Any]:
        sampling = self.sampling
        body: dict[str, Any] = {
            "model": self.model,
            "messages": request.messages if request.image is None else with_picture(request.messages, request.image),
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_new_tokens,
        }
        if request.tools is not None:
            body["tools"] = request.tools
            body["tool_choice"] = self.tool_choice
        if self.seeded:
            # Per episode and turn, so samples differ across episodes yet repeat exactly on rerun;
            # 31 bits because some servers reject larger seeds.
            body["seed"] = request_seed(sampling.sampling_seed, request) % 2**31
        return body


def parse_completion(payload: Any, *, tools: bool = False) -> AgentReply:
    """The reply in a Chat Completions response body; missing usage gives ``None`` counts.

    ``tools``: the request offered tools, so ``message.tool_calls`` is read too.  Raises
    ``ValueError`` when the body has no ``choices[0].message`` object, content that is neither
    a string nor null, or (with ``tools``) tool calls that are no list of objects.
    """
    try:
        choice = payload["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError) as missing:
        raise ValueError(f"no choices[0].message in response: {str(payload)[:MAX_ERROR_CHARS]}") from missing
    if not isinstance(choice, dict) or not isinstance(message, dict):
        raise ValueError(f"choices[0].message is not an object: {str(payload)[:MAX_ERROR_CHARS]}")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise ValueError(f"choices[0].message.content is a {type(content).__name__}, not a string or null")
    calls = message.get("tool_calls") if tools else None
    if calls is not None and tool_calls_problem(calls) is not None:
        raise ValueError(f"choices[0].message.tool_calls is not a list of objects: {str(calls)[:MAX_ERROR_CHARS]}")
    reason, refusal = choice.get("finish_reason"), message.get("refusal")
    usage = payload.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return AgentReply(
        text=content or "",
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        finish_reason=reason if isinstance(reason, str) else None,
        null_content=content is None and not calls,
        # A refusal that is not a str (or is empty) says nothing worth keeping.
        refusal=refusal if isinstance(refusal, str) and refusal else None,
        tool_calls=calls,
    )


def _count(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


def _retry_after_seconds(headers: Any) -> float | None:
    try:
        return float(headers.get("retry-after"))
    except (TypeError, ValueError):
        return None  # absent, or an HTTP date: fall back to our own backoff


class OpenAICompatAgent:
    """Chat Completions client: concurrent requests with deadlines, retries, token counts from ``usage``."""

    acts_by_tools = True

    def __init__(
        self,
        client: Any,
        settings: CompletionSettings,
        *,
        max_concurrency: int = 8,
        timeout_s: float = 120.0,
        retry: RetryPolicy = RetryPolicy(),
        name: str = "openai",
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.client = client
        self.settings = settings
        self.max_concurrency = max_concurrency
        self.timeout_s = timeout_s
        self.retry = retry
        self.name = name
        self._rng = random.Random()  # jitter only; never the global random state
        self._slots = asyncio.Semaphore(max_concurrency)
        # One loop for the agent's life: the client's pooled connections belong to it.
        # Runner also turns Ctrl-C into cancelling the batch, then KeyboardInterrupt.
        self._runner: asyncio.Runner | None = asyncio.Runner()

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        if self._runner is None:
            raise RuntimeError(f"agent {self.name!r} is closed")
        return self._runner.run(self._act(requests))

    async def _act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        tasks = [asyncio.ensure_future(self._complete(request)) for request in requests]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            # One request failed for good, or Ctrl-C: stop the others now, not when they end.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _complete(self, request: AgentRequest) -> AgentReply:
        """One chat completion, retried on transient failures."""
        import httpx

        # ASCII JSON, not httpx's UTF-8: a lone surrogate an earlier reply put into the
        # conversation cannot be encoded as UTF-8, but travels exactly as a \u escape.
        body = json.dumps(self.settings.body(request), ensure_ascii=True).encode("ascii")
        attempts = self.retry.max_retries + 1
        failure = ""
        for attempt in range(attempts):
            retry_after = None
            try:
                async with self._slots, asyncio.timeout(self.timeout_s):
                    response = await self.client.post("chat/completions", content=body,
                                                      headers=self.settings.headers(request))
            except TimeoutError:
                failure = f"no complete answer within timeout_s={self.timeout_s}"
            except httpx.TransportError as error:  # refused and dropped connections
                failure = f"{type(error).__name__}: {error}"
            else:
                status = response.status_code
                if status == 200:
                    try:
                        return parse_completion(response.json(), tools=request.tools is not None)
                    # Bad JSON or shape (RecursionError: arrays nested thousands deep): a
                    # server fault, worth a retry.
                    except (ValueError, RecursionError) as error:
                        failure = f"HTTP 200 with a malformed body: {type(error).__name__}: {error}"
                elif status in RETRY_STATUSES:
                    failure = f"HTTP {status}: {response.text[:MAX_ERROR_CHARS]}"
                    retry_after = _retry_after_seconds(response.headers)
                else:
                    hint = " (the server refused the credentials: check the API key)" if status in AUTH_STATUSES else ""
                    raise CompletionError(
                        f"agent {self.name!r}: HTTP {status} from {self._url()}{hint}: "
                        f"{response.text[:MAX_ERROR_CHARS]}"
                    )
            if attempt + 1 < attempts:
                await asyncio.sleep(self.retry.delay(attempt, self._rng, retry_after))
        raise CompletionError(
            f"agent {self.name!r}: {self._url()} failed {attempts} attempts; last failure: {failure}"
        )

    def _url(self) -> str:
        return f"{self.client.base_url}chat/completions"

    def close(self) -> None:
        """Cancel whatever is still in flight, close the connections and the loop (idempotent)."""
        if self._runner is None:
            return
        try:
            self._runner.run(self._shutdown())
        finally:
            self._runner.close()
            self._runner = None

    async def _shutdown(self) -> None:
        # Requests left running by an interrupted act() (a KeyboardInterrupt that reached
        # the loop directly) are cancelled, not awaited.
        current = asyncio.current_task()
        leftovers = [task for task in asyncio.all_tasks() if task is not current]
        for task in leftovers:
            task.cancel()
        await asyncio.gather(*leftovers, return_exceptions=True)
        await self.client.aclose()


def make_openai_agent(
    model: str,
    *,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    temperature: float = EVAL_SAMPLING.temperature,
    top_p: float = EVAL_SAMPLING.top_p,
    max_new_tokens: int = EVAL_SAMPLING.max_new_tokens,
    sampling_seed: int | None = EVAL_SAMPLING.sampling_seed,
    max_concurrency: int = 8,
    timeout_s: float = 120.0,
    max_retries: int = 5,
    backoff_base_s: float = 0.5,
    backoff_cap_s: float = 30.0,
    tool_choice: str = "required",
    episode_header: bool = False,
    name: str | None = None,
) -> OpenAICompatAgent:
    """Factory behind ``make_agent("openai", ...)``.

    ``base_url`` defaults to ``$OPENAI_BASE_URL`` or a local ``vllm serve``
    (``http://127.0.0.1:8000/v1``).  ``sampling_seed=None`` sends no seed.  The key in
    ``$<api_key_env>`` is sent as a bearer token when set (a local server needs none).
    ``tool_choice`` (``required`` or ``auto``) goes with tools-mode requests (``+agent.tool_choice=auto``).
    ``episode_header=True`` names each request's episode in a header, for ragen-bench's scripted endpoint
    (``+agent.episode_header=true``).
    """
    import httpx

    sampling = SamplingSettings(
        temperature=temperature,
        top_p=top_p,
        max_new_tokens=max_new_tokens,
        sampling_seed=0 if sampling_seed is None else sampling_seed,
    )
    if tool_choice not in TOOL_CHOICES:
        raise ValueError(f"tool_choice must be one of {', '.join(TOOL_CHOICES)}, got {tool_choice!r}")
    settings = CompletionSettings(model=model, sampling=sampling, seeded=sampling_seed is not None,
                                  tool_choice=tool_choice, episode_header=episode_header)
    retry = RetryPolicy(max_retries=max_retries, base_s=backoff_base_s, cap_s=backoff_cap_s)
    url = base_url or os.environ.get("OPENAI_BASE_URL") or "http://127.0.0.1:8000/v1"
    headers = {"Content-Type": "application/json"}
    api_key = os.environ.get(api_key_env)
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    client = httpx.AsyncClient(
        base_url=url.rstrip("/") + "/",
        headers=headers,
        timeout=None,  # the agent's whole-request deadline replaces httpx's per-read timeouts
        limits=httpx.Limits(max_connections=max_concurrency, max_keepalive_connections=max_concurrency),
    )
    return OpenAICompatAgent(
        client,
        settings,
        max_concurrency=max_concurrency,
        timeout_s=timeout_s,
        retry=retry,
        name=name or f"openai:{model}",
    )
