"""A NeMo Gym resources server: one ragen-bench episode per session, played as ``ragen-bench eval`` plays it.

* ``POST /seed_session`` with a dataset row's ``env_id``, ``seed``, ``split`` (and ``sample``, ``chat``)
  starts the session's episode (:class:`~ragen_bench.chat.ChatEpisode`, eval's chat settings: the
  id's budget with ``chat`` on top) and returns the chat layer's turn-1 messages;
* ``POST /step`` with ``reply`` (the model's whole reply, ``<think>..</think><answer>..</answer>``)
  plays one turn as eval parses it and returns the next prompt's last user message, the turn's
  reward and whether the episode is over;
* ``POST /verify`` returns eval's score of the session's episode as the reward (``total_reward``:
  env rewards plus format penalties) with ``success`` and the turn count.

:func:`dataset_rows` writes the rows (``responses_create_params.input`` is the turn-1 prompt).
Sessions are NeMo Gym's (its session cookie); a session without ``/seed_session`` is refused.
"""

from __future__ import annotations

from typing import Any

import gymnasium
from fastapi import FastAPI, HTTPException, Request
from nemo_gym.base_resources_server import (
    BaseResourcesServerConfig,
    BaseSeedSessionRequest,
    BaseSeedSessionResponse,
    BaseVerifyRequest,
    BaseVerifyResponse,
    SimpleResourcesServer,
)
from nemo_gym.server_utils import SESSION_ID_KEY
from pydantic import BaseModel, PrivateAttr

from ragen_bench.chat import AgentReply, ChatEpisode
from ragen_bench.integrations.tasks import chat_config, first_messages, split_seeds
from ragen_bench.registry import ENV_IDS


class RagenResourcesServerConfig(BaseResourcesServerConfig):
    pass


class RagenSeedRequest(BaseSeedSessionRequest):
    env_id: str
    seed: int
    split: str = "test"
    sample: int = 0
    chat: dict[str, Any] = {}


class RagenSeedResponse(BaseSeedSessionResponse):
    messages: list[dict[str, str]]


class StepRequest(BaseModel):
    reply: str


class StepResponse(BaseModel):
    observation: str
    reward: float
    done: bool


class RagenVerifyResponse(BaseVerifyResponse):
    success: bool
    num_turns: int


class RagenResourcesServer(SimpleResourcesServer):
    config: RagenResourcesServerConfig
    _episodes: dict[str, ChatEpisode] = PrivateAttr(default_factory=dict)

    def setup_webserver(self) -> FastAPI:
        app = super().setup_webserver()
        app.post("/step")(self.step)
        return app

    def _episode(self, request: Request) -> ChatEpisode:
        episode = self._episodes.get(request.session[SESSION_ID_KEY])
        if episode is None:
            raise HTTPException(400, "no episode in this session: POST /seed_session first")
        return episode

    async def seed_session(self, request: Request, body: RagenSeedRequest) -> RagenSeedResponse:
        if body.env_id not in ENV_IDS:
            raise HTTPException(400, f"{body.env_id[:100]!r} is no single-agent ragen-bench id")
        try:
            config = chat_config(body.env_id, body.chat)
            episode = ChatEpisode(gymnasium.make(body.env_id), config, env_id=body.env_id, seed=body.seed,
                                  sample=body.sample, split=body.split)
            episode.reset()
        except ValueError as error:
            raise HTTPException(400, str(error)) from None
        old = self._episodes.pop(request.session[SESSION_ID_KEY], None)
        if old is not None:
            old.env.close()
        self._episodes[request.session[SESSION_ID_KEY]] = episode
        return RagenSeedResponse(messages=episode.messages)

    async def step(self, request: Request, body: StepRequest) -> StepResponse:
        episode = self._episode(request)
        if episode.done:
            raise HTTPException(400, "the episode is over: POST /verify for its score")
        episode.step(AgentReply(body.reply))
        return StepResponse(observation=episode.messages[-1]["content"],
                            reward=episode.trajectory().turns[-1].reward, done=episode.done)

    async def verify(self, request: Request, body: BaseVerifyRequest) -> RagenVerifyResponse:
        trajectory = self._episode(request).trajectory()
        return RagenVerifyResponse(**body.model_dump(), reward=trajectory.total_reward,
                                   success=trajectory.success, num_turns=trajectory.num_turns)


def dataset_rows(env_id: str, split: str = "test", limit: int | None = None,
                 chat: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """NeMo Gym rows for a panel's first ``limit`` seeds: the turn-1 prompt and what ``/seed_session`` takes."""
    config = chat_config(env_id, chat)
    env = gymnasium.make(env_id)
    try:
        return [{"responses_create_params": {"input": first_messages(env, env_id, seed, config, split)},
                 "env_id": env_id, "seed": seed, "split": split, "sample": 0, "chat": dict(chat or {})}
                for seed in split_seeds(env_id, split, limit)]
    finally:
        env.close()


if __name__ == "__main__":
    RagenResourcesServer.run_webserver()
