"""A served chat as a Gymnasium env: ``RAGEN/Chat-v0`` in-process, ``RAGEN/Remote-v0`` over ``ragen-bench serve``.

Both are the same env on either side of the wire, so a trainer that speaks Gymnasium can switch
between them without a change in what it sees::

    env = gymnasium.make("RAGEN/Remote-v0", url="http://127.0.0.1:8000", env_id="RAGEN/Sokoban-6x6-v0")
    prompt, info = env.reset(seed=123)                       # or options={"split": "test", "index": 0}
    prompt, reward, terminated, truncated, info = env.step("<think>...</think><answer>Up</answer>")

* the observation is the last message of the prompt (the text this turn adds);
  ``info["messages"]`` is the whole prompt an eval agent gets (the whole transcript once done);
* the action is the model's reply text, parsed as ``ragen-bench eval`` parses it (a malformed
  reply is an invalid turn with the format penalty, not an error);
* the reward is the turn's (env rewards plus format penalty); ``terminated`` when the env ended the
  episode, ``truncated`` when a budget did; ``info`` holds the id, seed, panel item, success,
  the turn's validity, parsed and executed actions (:class:`~.session.Step`);
* ``reset(seed=N)``, or ``reset(options={"split": S, "index": K})`` for panel item K (the episode
  eval plays for it); ``options={"env_id": ...}`` picks another of the served ids.

A request the session refuses raises :class:`~.session.ServeError` on both sides (the remote one
is its subclass :class:`~.client.ServerError`, with OpenEnv's error code).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium

from ragen_bench.envs.base import AnyText
from ragen_bench.integrations.openenv.session import (
    MAX_REPLY_CHARS, ChatSession, ServeError, Step, check_reply, served_ids,
)

# The longest observation the space declares: far above any prompt's last message.
MAX_OBSERVATION_CHARS = 1 << 20
_OPTIONS = ("env_id", "split", "index")


class _ChatView(gymnasium.Env[str, str]):
    """What both sides share: the spaces and the Gymnasium shape of a :class:`~.session.Step`."""

    metadata: dict[str, Any] = {"render_modes": []}
    observation_space = AnyText(max_length=MAX_OBSERVATION_CHARS, min_length=0)
    action_space = AnyText(max_length=MAX_REPLY_CHARS, min_length=0)

    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        options = dict(options or {})
        if unknown := sorted(set(options) - set(_OPTIONS)):
            raise ServeError(f"reset options are {', '.join(_OPTIONS)}; got {', '.join(unknown)}")
        step = self._reset(seed=seed, **options)
        return step.messages[-1]["content"], _info(step)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        step = self._step(action)
        return step.messages[-1]["content"], step.reward, step.terminated, step.truncated, _info(step)

    def _reset(self, **request: Any) -> Step:
        raise NotImplementedError

    def _step(self, reply: str) -> Step:
        raise NotImplementedError


def _info(step: Step) -> dict[str, Any]:
    return {**step.info, "messages": step.messages}


class ChatEnv(_ChatView):
    """``gymnasium.make("RAGEN/Chat-v0", env_id=ID_OR_SUITE)``: the served chat, in this process."""

    def __init__(self, env_id: str) -> None:
        self._session = ChatSession(served_ids(env_id))

    def _reset(self, **request: Any) -> Step:
        return self._session.reset(**request)

    def _step(self, reply: str) -> Step:
        return self._session.step(reply)

    def close(self) -> None:
        self._session.close()


class RemoteEnv(_ChatView):
    """``gymnasium.make("RAGEN/Remote-v0", url=URL, env_id=ID)``: a session on a ``ragen-bench serve`` server.

    ``env_id`` picks one of the server's ids (``None``: its first); the connection opens on the
    first reset and closes with :meth:`close`.
    """

    def __init__(self, url: str, env_id: str | None = None, message_timeout_s: float = 60.0) -> None:
        from ragen_bench.integrations.openenv.client import RagenClient

        self.env_id = env_id
        self._client = RagenClient(base_url=url, message_timeout_s=message_timeout_s).sync()

    def _reset(self, **request: Any) -> Step:
        from ragen_bench.integrations.openenv.client import as_step

        request.setdefault("env_id", self.env_id)
        # Unset keys stay off the wire: the server's defaults are the session's.
        return as_step(self._client.reset(**{key: value for key, value in request.items() if value is not None}).observation)

    def _step(self, reply: str) -> Step:
        from ragen_bench.integrations.openenv.client import as_step
        from ragen_bench.integrations.openenv.server import ReplyAction

        check_reply(reply)  # the session's own refusal, before a message the server would refuse is sent
        return as_step(self._client.step(ReplyAction(reply=reply)).observation)

    def close(self) -> None:
        self._client.close()
