"""A scripted OpenAI-compatible endpoint: Chat Completions answered as eval's scripted agents answer.

    python -m ragen_bench.integrations.scripted_server [--agent optimal|random] [--port 8000]
        [--host 127.0.0.1] [--chat '{"think": false}'] [--sampling-seed 0]

It lets an outside harness (verifiers' ``vf-eval``: :mod:`ragen_bench.integrations.verifiers`) run
ragen-bench episodes end to end with no model: ``POST /v1/chat/completions`` answers with the reply
``ragen-bench eval agent=optimal`` (or ``agent=random``) gives at that point of that episode, so
the harness's mean reward can be compared with eval's on the same seeds.

The scripted agents are privileged (they read the live env), so each request must name its episode
in the header ``X-Ragen-Bench-Episode``: eval's episode key, ``ENV_ID/SPLIT/SEED/SAMPLE`` (a real
model endpoint ignores the header).  The server is stateless: it plays the request's assistant
messages again on a fresh env as :class:`~ragen_bench.chat.ChatEpisode`, checks that the request's
messages are exactly the chat layer's prompt at that turn (any other text is refused, naming the
first differing message), then asks the agent for the next reply with the live env.  Chat settings
are eval's: the id's budget with ``--chat`` on top.  With ``--chat '{"images": true}'`` the last
user message must carry the picture eval's OpenAI agent sends (an ``image_url`` part, the PNG of
the current state, exactly), and no earlier message a picture: a vision client is checked too.  Ids whose prompt shows only the last turns
(a ``history_window``) cannot be replayed from their prompt and are refused; so are games.

Every request a client can get wrong is answered 400 with a one-line JSON error; nothing it sends
is executed or used as a path.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import gymnasium

from ragen_bench.chat import AgentReply, ChatEpisode
from ragen_bench.chat.config import ChatConfig, budgeted_settings, check_chat
from ragen_bench.chat.images import data_url
from ragen_bench.chat.protocol import Agent, AgentError
from ragen_bench.registry import ENV_IDS

EPISODE_HEADER = "X-Ragen-Bench-Episode"
SCRIPTED_AGENTS = ("optimal", "random")
MAX_BODY_BYTES = 8 * 1024 * 1024


class RequestError(ValueError):
    """A request this endpoint cannot answer; the message says why, in one line."""


def parse_episode_key(key: str | None) -> tuple[str, str, int, int]:
    """``ENV_ID/SPLIT/SEED/SAMPLE`` (eval's episode key) -> its four parts, checked."""
    if not key:
        raise RequestError(f"the {EPISODE_HEADER} header is missing: name the episode as ENV_ID/SPLIT/SEED/SAMPLE")
    parts = key.rsplit("/", 3)
    if len(parts) != 4 or not all(parts) or not parts[2].isdigit() or not parts[3].isdigit():
        raise RequestError(f"{EPISODE_HEADER}: expected ENV_ID/SPLIT/SEED/SAMPLE, got {key[:200]!r}")
    env_id, split, seed, sample = parts
    if env_id not in ENV_IDS:
        raise RequestError(f"{EPISODE_HEADER}: {env_id[:100]!r} is no single-agent ragen-bench id")
    return env_id, split, int(seed), int(sample)


def _message_text(message: Any, index: int) -> tuple[str, str]:
    if not isinstance(message, Mapping):
        raise RequestError(f"messages[{index}] is not an object")
    role, content = message.get("role"), message.get("content")
    if isinstance(content, list):  # OpenAI content parts: the text parts, joined as verifiers writes them
        content = "\n".join(part.get("text", "") for part in content if isinstance(part, Mapping)
                            and part.get("type") == "text")
    if not isinstance(role, str) or not isinstance(content, str):
        raise RequestError(f"messages[{index}] needs a string role and text content")
    return role, content


def served_chat(env_id: str, chat: Mapping[str, Any]) -> ChatConfig:
    """Eval's chat settings for ``env_id`` (its budget, ``chat`` on top); tools mode is refused (replies are text)."""
    config = check_chat(budgeted_settings(env_id, chat))
    if config.tools:
        raise ValueError("chat.action_format=tools is not served: this endpoint answers with text")
    return config


def _pictures(message: Any) -> list[str]:
    """The ``image_url`` URLs among a message's content parts."""
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, list):
        return []
    return [str((part.get("image_url") or {}).get("url", "")) if isinstance(part.get("image_url"), Mapping) else ""
            for part in content if isinstance(part, Mapping) and part.get("type") == "image_url"]


def picture_problem(messages: Sequence[Any], expected: bytes | None) -> str | None:
    """What is wrong with the pictures a request sent, ``expected`` being the chat layer's PNG (``None``: none)."""
    sent = [(index, url) for index, message in enumerate(messages) for url in _pictures(message)]
    if expected is None:
        return None if not sent else f"messages[{sent[0][0]}] holds a picture; this endpoint serves text (chat.images=false)"
    last = len(messages) - 1
    if [index for index, _ in sent] != [last]:
        return f"the last message (messages[{last}]) must hold the state's picture, and only it; pictures sent: {len(sent)}"
    if sent[0][1] != data_url(expected):
        return f"the picture in messages[{last}] is not the chat layer's picture of this state"
    return None


def _first_difference(sent: Sequence[tuple[str, str]], expected: Sequence[Mapping[str, str]]) -> str | None:
    for index, (got, want) in enumerate(zip(sent, expected)):
        if got != (want["role"], want["content"]):
            return f"messages[{index}] ({got[0]}) differs from the chat layer's ({want['role']})"
    if len(sent) != len(expected):
        return f"{len(sent)} messages sent, the chat layer's prompt at this turn has {len(expected)}"
    return None


def scripted_usage(messages: Sequence[Any], text: str) -> dict[str, int]:
    """Token counts for a scripted reply, which has none: characters / 4 rounded up, as a tokenizer averages.

    Counts of 0 for a reply with text would be implausible to ``leaderboard verify``, which bounds each
    turn's counts by its texts; these are inside those bounds.
    """
    prompt = sum(len(_message_text(message, index)[1]) for index, message in enumerate(messages))
    counts = {"prompt_tokens": -(-prompt // 4), "completion_tokens": -(-len(text) // 4)}
    return {**counts, "total_tokens": counts["prompt_tokens"] + counts["completion_tokens"]}


class ScriptedEndpoint:
    """The answers of one scripted agent (``optimal`` or ``random``), request by request."""

    def __init__(self, agent: str = "optimal", *, chat: Mapping[str, Any] | None = None,
                 sampling_seed: int = 0) -> None:
        if agent not in SCRIPTED_AGENTS:
            raise ValueError(f"agent must be one of {SCRIPTED_AGENTS}, got {agent!r}")
        self.agent_name = agent
        self.chat = dict(chat or {})
        self.sampling_seed = sampling_seed

    def reply(self, key: str | None, messages: Any) -> str:
        """The agent's reply to ``messages``, the prompt of episode ``key`` (module docstring)."""
        env_id, split, seed, sample = parse_episode_key(key)
        config = served_chat(env_id, self.chat)
        if config.history_window is not None:
            raise RequestError(f"{env_id} shows only the last {config.history_window} turns: its episodes "
                               "cannot be replayed from a prompt")
        if not isinstance(messages, list) or not messages:
            raise RequestError("messages must be a non-empty list")
        sent = [_message_text(message, index) for index, message in enumerate(messages)]
        episode = ChatEpisode(gymnasium.make(env_id), config, env_id=env_id, seed=seed, sample=sample, split=split)
        try:
            episode.reset()
            for role, content in sent:
                if role == "assistant":
                    if episode.done:
                        raise RequestError(f"episode {key} is over before the last assistant message")
                    episode.step(AgentReply(content))
            if episode.done:
                raise RequestError(f"episode {key} is over: the request holds its last reply")
            request = episode.request(live_env=True)
            problem = _first_difference(sent, episode.messages) or picture_problem(messages, request.image)
            if problem is not None:
                raise RequestError(f"not the chat layer's prompt of {key} at turn {episode.turn}: {problem}")
            return self._agent(config).act([request])[0].text
        finally:
            episode.env.close()

    def _agent(self, config: ChatConfig) -> Agent:
        """The scripted agent with the settings eval's agent configs give it under ``config``."""
        from ragen_bench.agents import make_agent

        common = {"think": config.think, "separator": config.action_separator}
        if self.agent_name == "optimal":
            return make_agent("optimal", max_actions_per_turn=config.max_actions_per_turn, **common)
        return make_agent("random", sampling_seed=self.sampling_seed, actions_per_turn=1, **common)

    def completion(self, key: str | None, body: Any) -> dict[str, Any]:
        """The Chat Completions response to ``body`` (a parsed request)."""
        if not isinstance(body, Mapping):
            raise RequestError("the body must be a JSON object")
        if body.get("stream"):
            raise RequestError("stream=true is not served; ask for the whole reply")
        if body.get("n", 1) != 1:
            raise RequestError("n must be 1")
        text = self.reply(key, body.get("messages"))
        return {
            "id": f"chatcmpl-ragen-{time.time_ns()}", "object": "chat.completion", "created": int(time.time()),
            "model": str(body.get("model") or self.model_name),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": scripted_usage(body.get("messages"), text),
        }

    @property
    def model_name(self) -> str:
        return f"ragen-bench-{self.agent_name}"


def _handler(endpoint: ScriptedEndpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: one line per request would drown a long run's output."""

        def _send(self, status: int, payload: Mapping[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str) -> None:
            self._send(status, {"error": {"message": message, "type": "invalid_request_error"}})

        def do_GET(self) -> None:
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, {"object": "list", "data": [{"id": endpoint.model_name, "object": "model"}]})
            elif self.path.rstrip("/") == "/health":
                self._send(200, {"status": "ok"})
            else:
                self._error(404, f"no route {self.path[:100]!r}")

        def do_POST(self) -> None:
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self._error(404, f"no route {self.path[:100]!r}; POST /v1/chat/completions")
                return
            length = self.headers.get("Content-Length", "")
            if not length.isdigit() or int(length) > MAX_BODY_BYTES:
                self._error(400 if not length.isdigit() else 413, "a JSON body with Content-Length up to 8 MiB")
                return
            try:
                body = json.loads(self.rfile.read(int(length)) or b"null")
                self._send(200, endpoint.completion(self.headers.get(EPISODE_HEADER), body))
            except (RequestError, AgentError, UnicodeDecodeError, json.JSONDecodeError) as error:
                self._error(400, str(error))

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # vf-eval opens up to 128 episodes at once; the default backlog of 5 refuses connections under that.
    request_queue_size = 256


def make_server(endpoint: ScriptedEndpoint, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A threading HTTP server for ``endpoint`` (``port=0``: a free port, ``server.server_address[1]``)."""
    return _Server((host, port), _handler(endpoint))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ragen_bench.integrations.scripted_server",
                                     description="An OpenAI-compatible endpoint answering as eval's scripted agents.")
    parser.add_argument("--agent", choices=SCRIPTED_AGENTS, default="optimal")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port (printed)")
    parser.add_argument("--chat", default="{}", help="eval's chat.* keys as a JSON object, e.g. '{\"think\": false}'")
    parser.add_argument("--sampling-seed", type=int, default=0, help="the random agent's seed (eval's sampling_seed)")
    args = parser.parse_args(argv)
    try:
        chat = json.loads(args.chat)
        if not isinstance(chat, dict):
            raise ValueError("not a JSON object")
        served_chat(next(iter(ENV_IDS)), chat)  # a bad key or value fails here, before serving
    except ValueError as error:
        parser.error(f"--chat: {error}")
    if not 0 <= args.port <= 65535:
        parser.error(f"--port: 0..65535, got {args.port}")
    server = make_server(ScriptedEndpoint(args.agent, chat=chat, sampling_seed=args.sampling_seed),
                         args.host, args.port)
    host, port = server.server_address[:2]
    print(f"scripted {args.agent} endpoint on http://{host}:{port}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
