"""``openai``: any OpenAI-compatible Chat Completions server (``vllm serve``, hosted APIs).

Requests in a batch go out concurrently (a thread pool over one shared ``httpx.Client``, at
most ``concurrency`` in flight).  Rate limits (429), server errors (5xx), timeouts and dropped
connections are retried with capped exponential backoff and full jitter, honouring a
``Retry-After`` header; other 4xx answers are the caller's mistake and fail at once.  A request
that still fails raises :class:`CompletionError`: a silently empty reply would be scored as a
format failure and bias the benchmark.

The API key is read from an environment variable (``OPENAI_API_KEY`` by default) when the agent
is built and lives only in the HTTP client's headers: it is never part of the agent's name,
settings or replies, so it cannot leak into result files.

httpx is imported only when an agent is built.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ragen_bench.agents.base import AgentReply, AgentRequest
from ragen_bench.agents.hf import request_seed

RETRY_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))
MAX_ERROR_CHARS = 500  # server error bodies are data: keep what we quote bounded


class CompletionError(RuntimeError):
    """A chat completion failed for good (non-retryable answer, or retries exhausted)."""


@dataclass(frozen=True)
class RetryPolicy:
    """Capped exponential backoff with full jitter: attempt ``k`` waits U(0, min(cap, base * 2**k))."""

    max_retries: int = 5
    base_s: float = 0.5
    cap_s: float = 30.0

    def delay(self, attempt: int, rng: random.Random, retry_after_s: float | None = None) -> float:
        if retry_after_s is not None:  # the server knows best, within our cap
            return min(self.cap_s, max(0.0, retry_after_s))
        return rng.uniform(0.0, min(self.cap_s, self.base_s * 2**attempt))


@dataclass(frozen=True)
class CompletionSettings:
    """What every request asks for.  ``seed=None`` leaves sampling unseeded on the server."""

    model: str
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int | None = 0

    def body(self, request: AgentRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": request.messages,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
        }
        if self.seed is not None:
            # Per episode and turn, so samples differ across episodes yet repeat exactly on rerun;
            # 31 bits because some servers reject larger seeds.
            body["seed"] = request_seed(self.seed, request) % 2**31
        return body


def parse_completion(payload: Any) -> AgentReply:
    """The reply in a Chat Completions response body; missing usage gives ``None`` counts."""
    try:
        message = payload["choices"][0]["message"]
    except (KeyError, IndexError, TypeError) as missing:
        raise ValueError(f"no choices[0].message in response: {str(payload)[:MAX_ERROR_CHARS]}") from missing
    content = message.get("content") if isinstance(message, dict) else None
    usage = payload.get("usage") if isinstance(payload, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    return AgentReply(
        text=content if isinstance(content, str) else "",
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
    )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _retry_after_seconds(headers: Any) -> float | None:
    try:
        return float(headers.get("retry-after"))
    except (TypeError, ValueError):
        return None  # absent, or an HTTP date: fall back to our own backoff


class OpenAICompatAgent:
    """Chat Completions client: concurrent requests, retries with backoff, token counts from ``usage``."""

    def __init__(
        self,
        client: Any,
        settings: CompletionSettings,
        *,
        concurrency: int = 8,
        retry: RetryPolicy = RetryPolicy(),
        name: str = "openai",
        sleep: Any = time.sleep,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.client = client
        self.settings = settings
        self.concurrency = concurrency
        self.retry = retry
        self.name = name
        self._sleep = sleep
        self._rng = random.Random()  # jitter only; never the global random state
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="openai-agent")

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        return list(self._pool.map(self.complete, requests))

    def complete(self, request: AgentRequest) -> AgentReply:
        """One chat completion, retried on transient failures."""
        import httpx

        body = self.settings.body(request)
        failure = ""
        for attempt in range(self.retry.max_retries + 1):
            retry_after = None
            try:
                response = self.client.post("chat/completions", json=body)
            except httpx.TransportError as error:  # timeouts, refused and dropped connections
                failure = f"{type(error).__name__}: {error}"
            else:
                if response.status_code == 200:
                    try:
                        return parse_completion(response.json())
                    except ValueError as error:  # bad JSON or shape: a server fault, worth a retry
                        failure = f"malformed response: {error}"
                elif response.status_code in RETRY_STATUSES:
                    failure = f"HTTP {response.status_code}: {response.text[:MAX_ERROR_CHARS]}"
                    retry_after = _retry_after_seconds(response.headers)
                else:
                    raise CompletionError(
                        f"HTTP {response.status_code} from {self.client.base_url}: {response.text[:MAX_ERROR_CHARS]}"
                    )
            if attempt < self.retry.max_retries:
                self._sleep(self.retry.delay(attempt, self._rng, retry_after))
        raise CompletionError(f"gave up after {self.retry.max_retries + 1} attempts; last failure: {failure}")

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.client.close()


def make_openai_agent(
    model: str,
    *,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_new_tokens: int = 256,
    seed: int | None = 0,
    batch_size: int = 8,
    concurrency: int | None = None,
    timeout_s: float = 120.0,
    max_retries: int = 5,
    backoff_base_s: float = 0.5,
    backoff_cap_s: float = 30.0,
    name: str | None = None,
) -> OpenAICompatAgent:
    """Factory behind ``make_agent("openai", ...)``.

    ``base_url`` defaults to ``$OPENAI_BASE_URL`` or a local ``vllm serve``
    (``http://127.0.0.1:8000/v1``).  ``concurrency`` defaults to ``batch_size``.  The key in
    ``$<api_key_env>`` is sent as a bearer token when set (a local server needs none).
    """
    import httpx

    url = base_url or os.environ.get("OPENAI_BASE_URL") or "http://127.0.0.1:8000/v1"
    headers = {"Content-Type": "application/json"}
    api_key = os.environ.get(api_key_env)
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    workers = concurrency or batch_size
    client = httpx.Client(
        base_url=url.rstrip("/") + "/",
        headers=headers,
        timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
        limits=httpx.Limits(max_connections=workers, max_keepalive_connections=workers),
    )
    settings = CompletionSettings(
        model=model, temperature=temperature, top_p=top_p, max_tokens=max_new_tokens, seed=seed
    )
    return OpenAICompatAgent(
        client,
        settings,
        concurrency=workers,
        retry=RetryPolicy(max_retries=max_retries, base_s=backoff_base_s, cap_s=backoff_cap_s),
        name=name or f"openai:{model}",
    )
