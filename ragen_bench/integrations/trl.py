"""TRL 1.16's ``GRPOTrainer`` on ragen-bench's ids: datasets of panel seeds, a rollout function, a tool env.

The only module that imports trl's world (``datasets`` included); it imports neither at module
level, so importing it costs nothing until a dataset is built.  Three pieces (docs/trainers.md):

* :func:`panel_dataset`: one row per seed of a split (a frozen panel's, or the decontaminated
  train seeds), with ``seed``, ``env_id`` and ``split`` columns and a conversational ``prompt``:
  the chat layer's first-turn messages for that seed, exactly what ``ragen-bench eval`` sends.
  TRL hands a ``rollout_func`` nothing but the prompts, so the system message also carries the
  seed under the key ``seed`` (chat templates read ``role`` and ``content`` only).
* :func:`make_rollout_func`: ``rollout_func(prompts, trainer)`` playing each prompt's seed as a
  multi-turn :class:`~ragen_bench.chat.ChatEpisode` with the trainer's own model, sampled by the
  reference trainer's :class:`~ragen_bench.train.policy_agent.PolicyAgent`, and laid out by
  :func:`~ragen_bench.train.batch.build_batch` (so by :class:`~ragen_bench.chat.TokenLayout`):
  ``prompt_ids`` are turn 1's prompt, ``completion_ids`` every reply and the template text
  between replies, ``env_mask`` 0 on that text (the env's observations); ``episode_reward`` is
  the episode's total (env rewards plus format penalties), paid by :func:`episode_reward`.
* :func:`environment_factory`: a class for ``environment_factory=`` whose one tool, ``act``, takes
  one of the env's actions; ``reset(**row)`` plays the row's ``seed``; ``get_reward()`` is the sum
  of the env's rewards.  Tool calls are not eval's ``<answer>`` protocol, so its prompt is its own
  (:func:`tool_prompt`); the levels, actions, budgets and rewards are eval's.

Over a remote env (OpenEnv) the tool class would step a client instead of ``gymnasium.make``:
:func:`environment_factory` takes ``make_env`` for that seam.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import gymnasium

from ragen_bench.chat import ChatConfig, ChatEpisode, run_lockstep
from ragen_bench.chat.episode import action_lookup, format_reward
from ragen_bench.envs.base import ascii_casefold
from ragen_bench.integrations.tasks import chat_config, first_messages, split_seeds

if TYPE_CHECKING:
    from datasets import Dataset

    from ragen_bench.train.policy_agent import PolicyAgent

SEED_KEY = "seed"  # the system message's key holding the row's seed (module docstring)


def panel_dataset(
    env_id: str, split: str = "train", *, limit: int | None = None, chat: Mapping[str, Any] | None = None,
    tools: bool = False,
) -> Dataset:
    """A ``datasets.Dataset`` of ``split``'s seeds (the first ``limit``; train needs a limit).

    Columns ``prompt``, ``seed``, ``env_id``, ``split``.  ``prompt`` is eval's first-turn messages
    with the seed on the system message (:func:`make_rollout_func` reads it), or with ``tools``
    the tool env's opening (:func:`tool_prompt`; its ``reset`` fills the user message).
    """
    from datasets import Dataset

    config = chat_config(env_id, chat)
    env = gymnasium.make(env_id)
    rows = []
    for seed in split_seeds(env_id, split, limit):
        if tools:
            prompt = tool_prompt()
        else:
            system, *rest = first_messages(env, env_id, seed, config, split)
            prompt = [{**system, SEED_KEY: seed}, *rest]
        rows.append({"prompt": prompt, "seed": seed, "env_id": env_id, "split": split})
    env.close()
    return Dataset.from_list(rows)


# -- the rollout function ------------------------------------------------------------------


def make_rollout_func(
    env_id: str,
    *,
    chat: Mapping[str, Any] | None = None,
    max_new_tokens: int | None = None,
    split: str = "train",
) -> Callable[[list[list[dict[str, Any]]], Any], dict[str, list[Any]]]:
    """``rollout_func(prompts, trainer)`` for ``GRPOTrainer(rollout_func=...)`` (module docstring).

    ``prompts`` are :func:`panel_dataset` prompts (TRL repeats each ``num_generations`` times;
    every entry is played once, copies of a seed as samples 0, 1, ...).  A prompt that is not the
    chat layer's turn 1 for its seed under ``chat`` raises ``ValueError`` (a dataset built with
    other chat settings).  Replies are sampled at the trainer's ``temperature`` and ``top_p``, at
    most ``max_new_tokens`` tokens each (default: the id's budget, what eval's model agents get);
    TRL's ``max_completion_length`` does not cut the episode, so set it to at least the whole
    conversation.  The draws depend on ``args.seed``, the global step and the call only.  Chat
    settings with a ``history_window`` raise ``ValueError`` (one row per episode needs the full history).
    """
    from ragen_bench.agents.sampling import SamplingSettings
    from ragen_bench.registry import chat_budget
    from ragen_bench.train.schedule import derived_seed

    config = chat_config(env_id, chat)
    if config.history_window is not None:
        # A windowed turn's prompt is no prefix of the next one's, so an episode is no single TRL row.
        raise ValueError(f"make_rollout_func: {env_id} plays under chat.history_window={config.history_window}; "
                         "TRL takes one row per episode, which needs the full history (history_window=None)")
    tokens = max_new_tokens or chat_budget(env_id).max_new_tokens or SamplingSettings().max_new_tokens
    agents: dict[int, PolicyAgent] = {}  # one per model object: the trainer updates its weights in place
    envs: list[gymnasium.Env] = []
    calls = Counter[int]()

    def rollout_func(prompts: list[list[dict[str, Any]]], trainer: Any) -> dict[str, list[Any]]:
        import torch

        model = trainer.accelerator.unwrap_model(trainer.model)
        agent = agents.get(id(model))
        if agent is None:
            agent = agents[id(model)] = _policy_agent(model, trainer, tokens)
        step = trainer.state.global_step
        calls[step] += 1
        agent.sampling = replace(
            agent.sampling, temperature=trainer.temperature, top_p=trainer.top_p,
            sampling_seed=derived_seed(trainer.args.seed, "trl-rollout", step, calls[step]),
        )
        envs.extend(gymnasium.make(env_id) for _ in range(len(prompts) - len(envs)))
        episodes = _episodes(prompts, envs, env_id, config, split)
        # The sampler needs eval mode (a training model under gradient checkpointing keeps no KV cache);
        # TRL's loss needs the mode back.
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                played = run_lockstep(episodes, agent)
        finally:
            model.train(was_training)
        return rollout_fields(played, agent.pop_samples(t.episode_key for t in played), agent.pad_id)

    return rollout_func


def _policy_agent(model: Any, trainer: Any, max_new_tokens: int) -> PolicyAgent:
    from ragen_bench.agents.sampling import SamplingSettings
    from ragen_bench.train.policy_agent import PolicyAgent

    # Temperature and seed are set per call; PolicyAgent refuses temperature 0 (nothing to record).
    sampling = SamplingSettings(temperature=trainer.temperature, top_p=trainer.top_p, max_new_tokens=max_new_tokens)
    return PolicyAgent(model, trainer.processing_class, sampling=sampling, name="policy:trl")


def _episodes(
    prompts: Sequence[Sequence[Mapping[str, Any]]], envs: Sequence[gymnasium.Env], env_id: str, config: ChatConfig,
    split: str,
) -> list[ChatEpisode]:
    """One reset episode per prompt, on its own env; repeats of a seed numbered as samples 0, 1, ..."""
    samples = Counter[int]()
    episodes = []
    for prompt, env in zip(prompts, envs):
        seed = prompt_seed(prompt)
        episode = ChatEpisode(env, config, env_id=env_id, seed=seed, sample=samples[seed], split=split)
        samples[seed] += 1
        episode.reset()
        given = [{"role": m["role"], "content": m["content"]} for m in prompt]
        if given != episode.messages:
            raise ValueError(
                f"rollout_func: the prompt for {env_id} seed {seed} is not the chat layer's turn 1 under this "
                "chat config (build the dataset with panel_dataset and the same chat settings)"
            )
        episodes.append(episode)
    return episodes


def prompt_seed(prompt: Sequence[Mapping[str, Any]]) -> int:
    """The seed a :func:`panel_dataset` prompt carries on its system message."""
    seed = prompt[0].get(SEED_KEY) if prompt else None
    if type(seed) is not int:
        raise ValueError(f"rollout_func: the prompt's first message carries no {SEED_KEY!r} (use panel_dataset)")
    return seed


def rollout_fields(trajectories: Sequence[Any], samples: Mapping[str, Any], pad_id: int) -> dict[str, list[Any]]:
    """TRL's rollout fields from finished episodes and their samples, one entry per trajectory, in order.

    The rows are the reference trainer's (:func:`~ragen_bench.train.batch.build_batch`): the
    completion is each row past its first prompt, ``env_mask`` its response mask (1 on sampled
    ids), ``logprobs`` the sampling log-probs (0 on the env's text, which the mask drops).
    """
    from ragen_bench.train.batch import build_batch

    batch = build_batch(trajectories, samples, pad_id=pad_id)
    fields: dict[str, list[Any]] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": []}
    for row, start in enumerate(batch.prompt_lengths):
        end = int(batch.attention_mask[row].sum())
        fields["prompt_ids"].append(batch.input_ids[row, :start].tolist())
        fields["completion_ids"].append(batch.input_ids[row, start:end].tolist())
        fields["logprobs"].append(batch.old_log_probs[row, start:end].tolist())
        fields["env_mask"].append(batch.response_mask[row, start:end].int().tolist())
    fields["episode_reward"] = [t.total_reward for t in trajectories]
    return fields


def episode_reward(completions: Sequence[Any], episode_reward: Sequence[float], **_: Any) -> list[float]:
    """The reward function for :func:`make_rollout_func`: each episode's total, as eval scores it."""
    return list(episode_reward)


# -- the tool environment ------------------------------------------------------------------

ACT_DOC = """Take one action in the game.

Args:
    action: {action}

Returns:
    The reward the action earned and the new state.
"""
TOOL_SYSTEM = "You are an agent playing a text game. Act by calling the act tool, one action per call."


def tool_prompt() -> list[dict[str, str]]:
    """The tool env's dataset prompt: its system message and an empty user message ``reset`` fills."""
    return [{"role": "system", "content": TOOL_SYSTEM}, {"role": "user", "content": ""}]


def environment_factory(
    env_id: str, *, chat: Mapping[str, Any] | None = None, make_env: Callable[[], gymnasium.Env] | None = None,
) -> type:
    """A class for ``GRPOTrainer(environment_factory=...)`` playing ``env_id``'s seeds with actions as tool calls.

    ``act(action)`` executes one action named as eval names them (ASCII case ignored; free-text
    envs take the answer as written) and returns the reward and the new state; an unknown name
    raises ``ValueError`` (TRL shows the model the error) and steps nothing.  The episode ends
    when the env ends or eval's action budget (``max_actions_per_episode``) is spent; calls after
    that raise.  ``make_env`` builds the env (default ``gymnasium.make(env_id)``).
    """
    config = chat_config(env_id, chat)
    build = make_env or (lambda: gymnasium.make(env_id))
    probe = build()
    probe.reset(seed=0)
    names = getattr(probe.unwrapped, "action_names", None)
    probe.close()
    described = "the answer, as free text" if names is None else f"one of {', '.join(names)} (not case-sensitive)"

    class RagenToolEnv:
        __doc__ = f"{env_id}: each tool call takes one action; reset(seed=...) plays that seed."

        def __init__(self) -> None:
            self.env = build()
            self.rewards: list[float] = []
            self.done = True

        def reset(self, seed: int, **row: Any) -> str:
            observation, _ = self.env.reset(seed=seed)
            unwrapped = self.env.unwrapped
            self.lookup = action_lookup(getattr(unwrapped, "action_names", None))
            self.rewards, self.done = [], False
            symbols = "".join(f"{s}: {m}\n" for s, m in getattr(unwrapped, "symbol_meanings", {}).items())
            return (
                f"{getattr(unwrapped, 'instruction', '')}\n{symbols}"
                f"The episode allows {config.max_actions_per_episode} actions.\nState:\n{observation}"
            )

        def act(self, action: str) -> str:
            if self.done:
                raise ValueError("the episode is over; no more actions")
            chosen: Any = action
            if self.lookup is not None:
                chosen = self.lookup.get(ascii_casefold(action.strip()))
                if chosen is None:
                    raise ValueError(f"unknown action {action!r}; the actions are {', '.join(names or ())}")
            elif not self.env.action_space.contains(action):
                raise ValueError("the answer is not a valid action here")
            observation, reward, terminated, truncated, _ = self.env.step(chosen)
            self.rewards.append(float(reward))
            self.done = terminated or truncated or len(self.rewards) >= config.max_actions_per_episode
            ending = "\nThe episode is over." if self.done else ""
            return f"Reward: {format_reward(float(reward))}\nState:\n{observation}{ending}"

        def get_reward(self) -> float:
            """The env's rewards summed over the episode's actions (eval's total without format penalties)."""
            return sum(self.rewards)

    # transformers builds the tool's schema from the docstring (Google style), so it names the id's actions.
    RagenToolEnv.act.__doc__ = ACT_DOC.format(action=described)
    RagenToolEnv.__name__ = RagenToolEnv.__qualname__ = "RagenToolEnv"
    return RagenToolEnv
