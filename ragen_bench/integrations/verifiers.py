"""verifiers 0.4 (``verifiers.v1``): ragen-bench's panels as a taskset, played as eval plays them.

The only module that imports ``verifiers`` (own virtualenv: ``scripts/setup_verifiers_venv.sh``;
verifiers pins ``mcp==2.0.0``, which OpenEnv's stack refuses).  verifiers finds it through the
plugin package ``plugins/ragen-bench-vf`` (taskset id ``ragen-bench-vf``), which re-exports what is
defined here; ``vf-eval ragen-bench-vf --env.taskset.env RAGEN/Sokoban-6x6-v0 ...`` runs it.

* :class:`RagenTaskset`: one task per episode eval plays, for ``env`` (an id) or ``suite``, ``split``,
  ``limit`` and ``samples`` as in ``ragen-bench eval``: the same panel seeds in the same order,
  keyed by eval's episode key (``RAGEN/Sokoban-6x6-v0/test/123/0``); the task's prompt is the chat
  layer's turn-1 messages; ``chat`` holds eval's ``chat.*`` keys (on top of each id's budget).
* :class:`RagenEnv`: plays a task as :class:`~ragen_bench.chat.ChatEpisode`, multi-turn: each reply
  of the model is parsed as eval parses it, and the next turn's prompt is the chat layer's whole
  prompt (the normalized earlier replies, a history window where the id has one), so every model
  call sees exactly what eval's agent sees.  The episode record (eval's trajectory fields) goes
  into ``trace.info["trajectory"]``, and :class:`RagenTask` scores from it: the reward is eval's
  ``total_reward`` (env rewards plus format penalties); ``success``, turns and actions are metrics.
* :class:`ChatLayerHarness`: the seat's program, run in-process: one Chat Completions call per turn
  through verifiers' interception endpoint, with the prompt the env hands it.  No sandbox, no
  ``uv`` bootstrap, no tools; the request carries the episode key in the header
  ``X-Ragen-Bench-Episode`` (a model endpoint ignores it; the scripted endpoint
  :mod:`.scripted_server` needs it).  The seat's runtime defaults to ``subprocess`` (local).

Games (two seats) are not served: the env has one player.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import gymnasium
import httpx
from pydantic import Field, model_validator
import verifiers.v1 as vf
from verifiers.v1.dialects.chat import message_to_wire
from verifiers.v1.runtimes import ProgramResult

from ragen_bench.chat import AgentReply, ChatEpisode
from ragen_bench.chat.trajectory import scored_progress
from ragen_bench.eval.config import eval_targets
from ragen_bench.integrations.scripted_server import EPISODE_HEADER
from ragen_bench.integrations.tasks import chat_config, first_messages, split_seeds
from ragen_bench.registry import ENV_IDS

if TYPE_CHECKING:
    from verifiers.v1.clients import ModelContext
    from verifiers.v1.runtimes import Runtime

TASKSET_ID = "ragen-bench-vf"


class RagenTasksetConfig(vf.TasksetConfig):
    """Which episodes: eval's keys of the same names (``env`` or ``suite``; ``--env.taskset.env ...``).

    Checked when the config is built (so ``vf-eval`` reports a bad key as a config error): the
    targets as eval checks them, single-agent ids only, ``chat`` keys as eval's ``chat.*``.
    """

    env: str | None = None
    """One single-agent id, as eval's ``env=`` (e.g. RAGEN/Sokoban-6x6-v0); or give ``suite``."""
    suite: str | None = None
    """A suite's eval panels, as eval's ``suite=`` (its single-agent ids)."""
    split: str | None = "test"
    """The panel split (with a suite: keep only that split's panels; None: all of them)."""
    limit: int | None = Field(None, ge=1)
    """The first N seeds of each panel, as eval's ``limit=``."""
    samples: int = Field(1, ge=1)
    """Episodes per seed (eval's sample index, part of each task's key), as eval's ``samples=``."""
    chat: dict[str, Any] = {}
    """Eval's ``chat.*`` keys, on top of each id's budget, e.g. ``'{"think": false}'``."""

    @model_validator(mode="after")
    def _check(self) -> RagenTasksetConfig:
        if self.id and (self.env is not None or self.suite is not None):
            for env_id, _ in targets(self):
                chat_config(env_id, self.chat)
        return self


def targets(config: RagenTasksetConfig) -> list[tuple[str, str]]:
    """The ``(env_id, split)`` pairs eval plays for these keys; games are refused (one seat here)."""
    pairs = eval_targets({"env": config.env, "suite": config.suite, "split": config.split})
    games = [env_id for env_id, _ in pairs if env_id not in ENV_IDS]
    if games:
        raise ValueError(f"{', '.join(games)}: a game has two seats; the verifiers env plays single-agent ids")
    return pairs


class RagenTaskData(vf.TaskData):
    """One episode of eval's plan: the id, panel split, seed, sample and the chat keys it is played with."""

    env_id: str
    split: str
    seed: int
    sample: int = 0
    chat: dict[str, Any] = {}

    @property
    def episode_key(self) -> str:
        return f"{self.env_id}/{self.split}/{self.seed}/{self.sample}"


def _episode_record(trace: vf.Trace) -> dict[str, Any]:
    record = trace.info.get("trajectory")
    if not isinstance(record, dict):
        raise ValueError("the trace holds no episode record (trace.info['trajectory']): the episode was not played")
    return record


class RagenTask(vf.Task[RagenTaskData, vf.State, vf.TaskConfig]):
    @property
    def key(self) -> str:
        """Eval's episode key: durable, and unique within a taskset."""
        return self.data.episode_key

    @vf.reward
    async def total_reward(self, trace: vf.Trace) -> float:
        """Eval's score of the episode: env rewards plus format penalties."""
        return float(_episode_record(trace)["total_reward"])

    @vf.metric
    async def episode(self, trace: vf.Trace) -> dict[str, float]:
        """Eval's other per-episode numbers (and whether the episode ended before the seat stopped)."""
        record = _episode_record(trace)
        names = ("success", "num_turns", "num_actions", "num_valid_actions", "num_effective_actions")
        return {**{name: float(record[name]) for name in names},
                "progress": scored_progress(record["success"], record.get("progress")),
                "episode_done": float(trace.info["episode_done"])}


def episode_plan(config: RagenTasksetConfig) -> list[tuple[str, str, int, int]]:
    """Eval's episodes for these keys, in eval's order: ``(env_id, split, seed, sample)`` (a suite's episode
    counts cut its panels as eval's plan does)."""
    from ragen_bench.eval.plan import panel_cut
    from ragen_bench.suites import episode_counts

    pairs = targets(config)
    counts = episode_counts(config.suite, pairs)
    return [(env_id, split, seed, sample) for env_id, split in pairs
            for seed in split_seeds(env_id, split, panel_cut(config.limit, counts.get((env_id, split))))
            for sample in range(config.samples)]


class RagenTaskset(vf.Taskset[RagenTask, RagenTasksetConfig]):
    """Every episode ``ragen-bench eval`` plays for the config's keys (module docstring)."""

    def load(self) -> Iterator[RagenTask]:
        chat = dict(self.config.chat)
        envs: dict[str, gymnasium.Env] = {}
        try:
            for env_id, split, seed, sample in episode_plan(self.config):
                env = envs.get(env_id) or envs.setdefault(env_id, gymnasium.make(env_id))
                prompt = first_messages(env, env_id, seed, chat_config(env_id, chat), split)
                data = RagenTaskData(name=f"{env_id}/{split}/{seed}/{sample}", prompt=prompt,
                                     env_id=env_id, split=split, seed=seed, sample=sample, chat=chat)
                yield RagenTask(data, self.config.task)
        finally:
            for env in envs.values():
                env.close()


class RagenEnvConfig(vf.EnvConfig):
    # A local runtime (verifiers' default is a hosted sandbox) and no network notice in the prompt:
    # the prompt is the chat layer's, word for word.
    player: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig(), network_notice=False)


def reply_of(segment: vf.Segment) -> AgentReply:
    """The model's reply text as eval's agent protocol holds it (unstripped; ``None`` content kept as such)."""
    for message in reversed(segment.messages):
        if isinstance(message, vf.AssistantMessage):
            if message.content is None:
                return AgentReply("", null_content=True)
            return AgentReply(message.content if isinstance(message.content, str)
                              else "".join(getattr(part, "text", "") for part in message.content))
    return AgentReply("", null_content=True)


class RagenEnv(vf.Env[RagenEnvConfig]):
    """One seed played as eval plays it, the seat's model answering each turn (module docstring)."""

    def __init__(self, config: RagenEnvConfig) -> None:
        taskset = config.taskset
        # Checked here, not on the config: verifiers validates the config before it holds every flag.
        if isinstance(taskset, RagenTasksetConfig) and (taskset.env is None) == (taskset.suite is None):
            raise ValueError("give exactly one of --env.taskset.env ID or --env.taskset.suite NAME")
        super().__init__(config)

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        data = task.data
        episode = ChatEpisode(gymnasium.make(data.env_id), chat_config(data.env_id, data.chat), env_id=data.env_id,
                              seed=data.seed, sample=data.sample, split=data.split)
        try:
            episode.reset()
            if [dict(role=m.role, content=m.content) for m in data.prompt] != episode.messages:
                raise ValueError(f"task {data.episode_key}: its prompt is not the chat layer's turn-1 prompt")
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn()
                while not segment.terminated:
                    episode.step(reply_of(segment))
                    if episode.done:
                        break
                    segment = await interaction.turn(episode.messages)
                # Recorded before the exchange closes: closing scores the trace (RagenTask's reward).
                interaction.trace.info["trajectory"] = episode.trajectory().to_dict()
                interaction.trace.info["episode_done"] = episode.done
        finally:
            episode.env.close()


class ChatLayerHarnessConfig(vf.HarnessConfig):
    request_timeout: float = 600.0


class ChatLayerHarness(vf.Harness[ChatLayerHarnessConfig]):
    """One Chat Completions call per turn, in-process, on the prompt the env hands it (module docstring)."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx: ModelContext, trace: vf.Trace, runtime: Runtime, endpoint: str, secret: str,
                     mcp_urls: dict[str, str], data: vf.TaskData, tool_interception_url: str | None = None,
                     ) -> ProgramResult:
        return await self._complete(ctx, endpoint, secret, data, list(data.prompt or []))

    async def resume(self, ctx: ModelContext, trace: vf.Trace, runtime: Runtime, endpoint: str, secret: str,
                     mcp_urls: dict[str, str], data: vf.TaskData, messages: vf.Messages,
                     tool_interception_url: str | None = None) -> ProgramResult:
        """The env sends each turn's whole prompt (the chat layer's): it replaces the conversation."""
        return await self._complete(ctx, endpoint, secret, data, list(messages))

    async def _complete(self, ctx: ModelContext, endpoint: str, secret: str, data: vf.TaskData,
                        messages: vf.Messages) -> ProgramResult:
        body = {"model": ctx.model, "messages": [message_to_wire(message) for message in messages]}
        headers = {"Authorization": f"Bearer {secret}", EPISODE_HEADER: getattr(data, "episode_key", "")}
        async with httpx.AsyncClient(timeout=self.config.request_timeout) as client:
            response = await client.post(f"{endpoint.rstrip('/')}/chat/completions", json=body, headers=headers)
        if response.status_code != 200:
            return ProgramResult(exit_code=1, stdout="", stderr=f"model call: HTTP {response.status_code}: "
                                                                  f"{response.text[:2000]}")
        return ProgramResult(exit_code=0, stdout="", stderr="")


def env_config(*, env: str | None = None, suite: str | None = None, split: str | None = "test",
               limit: int | None = None, samples: int = 1, chat: Mapping[str, Any] | None = None) -> RagenEnvConfig:
    """The env config ``vf-eval ragen-bench-vf --env.taskset.KEY VALUE ...`` builds, for Python callers."""
    return RagenEnvConfig(taskset={"id": TASKSET_ID, "env": env, "suite": suite, "split": split, "limit": limit,
                                   "samples": samples, "chat": dict(chat or {})})


def load_environment(**keys: Any) -> RagenEnv:
    """verifiers' own loader (``vf.load_environment``) on :func:`env_config` (``keys``: its keyword arguments)."""
    return vf.load_environment(env_config(**keys))
