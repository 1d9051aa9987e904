"""The turn loop: an env seen as a chat (lock-step batches of such chats: :mod:`.lockstep`).

Action semantics (matching RAGEN's ``es_manager.py``):

* The reply is parsed (:mod:`ragen_bench.chat.parser`); at most
  ``max_actions_per_turn`` actions are kept.
* Each action name is looked up ignoring the case of ASCII letters only (``A-Z`` ==
  ``a-z``).  There is no Unicode case folding or normalisation: a look-alike such as
  ``OAK`` written with the Kelvin sign (U+212A, which ``str.lower`` turns into ``k``)
  or a fullwidth ``Ｕｐ`` is not a valid name.  Invalid names are dropped and
  **every valid action is executed in order, including valid ones after an invalid
  one** (RAGEN filters the list, it does not stop at the first bad name).
* The turn costs ``format_penalty`` once if the reply was malformed (a reply without
  content, ``null_content``, included), named no action, or named any invalid action.
* Valid actions beyond the episode's remaining budget are not executed (and not
  penalised).  Execution stops as soon as the env terminates or truncates.
* The episode ends when the env ends, the action budget is spent, or ``max_turns``
  turns have been played.

Free-text envs (``action_names is None``) take the whole answer as one action; it is
invalid when the env's action space does not contain it.

Under ``action_format="tools"`` the reply's ``tool_calls`` name the actions instead of an
``<answer>`` (:mod:`ragen_bench.chat.tools` reads them; a malformed call is a malformed reply,
a reply without content is then no fault), and from there the rules above apply unchanged.

Every reply is checked against the agent protocol (:mod:`ragen_bench.chat.protocol`)
before it is used; the text an agent sends is recorded exactly (``raw_response``, cut
only at ``max_response_chars``), whatever characters it holds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import gymnasium
import numpy as np

from ragen_bench.chat.images import draws_pictures, picture, pixels_digest, png_bytes
from ragen_bench.chat.config import ChatConfig
from ragen_bench.chat.parser import ParsedResponse, parse_response
from ragen_bench.chat.protocol import AgentError, AgentReply, AgentRequest, LiveEnvView, reply_problem
from ragen_bench.chat.tools import act_tool, answer_message, assistant_message, read_tool_calls
from ragen_bench.chat.trajectory import ActionId, Trajectory, TurnRecord, episode_key
from ragen_bench.envs.base import ascii_casefold

_INFO_SCALARS = (bool, int, float, str)


class ChatEpisode:
    """One env episode played as a conversation (see the module docstring for the rules)."""

    def __init__(
        self,
        env: gymnasium.Env[Any, Any],
        config: ChatConfig,
        *,
        env_id: str,
        seed: int,
        sample: int = 0,
        split: str = "",
    ) -> None:
        if type(sample) is not int or sample < 0:
            raise ValueError(f"episode {env_id}/{split}/{seed}: sample must be a non-negative int, got {sample!r}")
        self.env = env
        self.config = config
        self.env_id = env_id
        self.seed = seed
        self.sample = sample
        self.split = split
        self.key = episode_key(env_id, split, seed, sample)
        self._started = False

    # -- lifecycle ------------------------------------------------------------------

    def reset(self) -> None:
        """Reset the env with this episode's seed and build the first prompt."""
        observation, info = self.env.reset(seed=self.seed)
        # Read the env's declarations only now: an env may set them per episode
        # (Bandit orders its arm names by seed).
        unwrapped = self.env.unwrapped
        action_names = getattr(unwrapped, "action_names", None)
        self._action_ids = action_lookup(action_names)
        names = None if action_names is None else tuple(action_names)
        self._tools = act_tool(names, self.config.max_actions_per_turn) if self.config.tools else None
        self._intro = first_prompt_intro(
            self.config,
            getattr(unwrapped, "instruction", ""),
            tuple(getattr(unwrapped, "symbol_meanings", {}).items()),
            names,
        )
        self._started = True
        self._observation = observation
        self._draw()
        self._turns: list[TurnRecord] = []
        # user_blocks[k] is the state text of turn k+1; user messages are assembled
        # from them so a history window can re-slice without re-rendering.
        self._user_blocks = [self._turn_block(1, observation, self.config.max_actions_per_episode)]
        self._transcript = [
            {"role": "system", "content": self.config.chat_template.system},
            {"role": "user", "content": self._intro + self._user_blocks[0]},
        ]
        self._actions_taken = 0
        self._valid_actions = 0
        self._effective_actions = 0
        self._optimal_length = info.get("optimal_length")
        self._success = bool(info.get("success", False))
        self._progress = progress_of(info)
        self._terminated = False
        self._env_truncated = False
        self._done = False

    @property
    def started(self) -> bool:
        return self._started

    @property
    def done(self) -> bool:
        return self._started and self._done

    @property
    def turn(self) -> int:
        """1-based index of the turn the next request is for."""
        return len(self._turns) + 1

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The prompt for the next turn (the full transcript once the episode is done).

        Fresh message dicts every time: an agent that edits its prompt in place (say, to
        drop old reasoning) must not rewrite the episode's record.
        """
        window = self.config.history_window
        full = self._done or window is None or len(self._turns) < window
        return [dict(message) for message in (self._transcript if full else self._windowed_prompt(window))]

    def request(self, *, live_env: bool = False) -> AgentRequest:
        """The next turn's request; ``live_env=True`` adds the privileged env view."""
        self._require_live()
        return AgentRequest(
            messages=self.messages,
            episode_key=self.key,
            turn=self.turn,
            actions_left=self.config.max_actions_per_episode - self._actions_taken,
            live_env=LiveEnvView(self.env) if live_env else None,
            tools=self._tools,
            image=self._png,
        )

    # -- one turn -------------------------------------------------------------------

    def step(self, reply: AgentReply) -> None:
        """Parse ``reply``, execute its valid actions, record the turn.

        A reply that breaks the protocol raises :class:`AgentError` and changes nothing.
        """
        problem = reply_problem(reply)
        if problem is not None:
            raise AgentError(f"invalid reply for episode {self.key!r}: {problem}")
        self._play(reply)

    def _play(self, reply: AgentReply) -> None:
        """:meth:`step` for a reply already checked (run_lockstep checks whole batches)."""
        self._require_live()
        config = self.config
        text = reply.text
        parsed = self._parse(reply)
        valid_ids = [a for a in map(self._to_action_id, parsed.actions) if a is not None]
        # A reply without content (reply.null_content) is malformed like any unparseable one, unless
        # its answer is a tool call.
        all_valid = (
            parsed.well_formed and (config.tools or not reply.null_content) and bool(parsed.actions)
            and len(valid_ids) == len(parsed.actions)
        )
        self._valid_actions += len(valid_ids)

        budget = config.max_actions_per_episode - self._actions_taken
        executed: list[ActionId] = []
        rewards: list[float] = []
        effective = 0
        info: Mapping[str, Any] = {}
        for action in valid_ids[:budget]:
            observation, reward, terminated, truncated, info = self.env.step(action)
            executed.append(action)
            rewards.append(float(reward))
            effective += bool(info.get("action_is_effective", False))
            if terminated or truncated:
                self._terminated, self._env_truncated = bool(terminated), bool(truncated)
                break
        if executed:
            self._observation = observation
            self._success = bool(info.get("success", False))
            self._progress = progress_of(info)
        self._actions_taken += len(executed)
        self._effective_actions += effective

        self._turns.append(
            TurnRecord(
                raw_response=text[: config.max_response_chars],
                normalized_response=parsed.normalized,
                parsed_actions=list(parsed.actions),
                valid=all_valid,
                action_ids=executed,
                env_rewards=rewards,
                format_penalty=0.0 if all_valid else config.format_penalty,
                num_effective_actions=effective,
                response_chars=len(text),
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                finish_reason=reply.finish_reason,
                null_content=reply.null_content,
                refusal=reply.refusal,
                tool_calls=reply.tool_calls if config.tools else None,
                image_sha256=self._digest,
                info=info_lite(info),
            )
        )
        self._done = (
            self._terminated
            or self._env_truncated
            or self._actions_taken >= config.max_actions_per_episode
            or len(self._turns) >= config.max_turns
        )
        self._append_turn_messages(parsed, sum(rewards))

    def trajectory(self) -> Trajectory:
        """The episode's record (final once :attr:`done`; a snapshot any time after reset)."""
        if not self._started:
            raise RuntimeError(f"episode {self.key} has not been reset")
        turns = self._turns
        return Trajectory(
            env_id=self.env_id,
            split=self.split,
            seed=self.seed,
            sample=self.sample,
            template_hash=self.config.template_hash(),
            messages=list(self._transcript),
            turns=list(turns),
            success=self._success,
            total_reward=sum(sum(t.env_rewards) + t.format_penalty for t in turns),
            num_turns=len(turns),
            num_actions=self._actions_taken,
            num_valid_actions=self._valid_actions,
            num_effective_actions=self._effective_actions,
            optimal_length=self._optimal_length,
            terminated=self._terminated,
            truncated=self._done and not self._terminated,
            progress=self._progress,
        )

    # -- internals ------------------------------------------------------------------

    def _require_live(self) -> None:
        if not self._started or self._done:
            raise RuntimeError(f"episode {self.key} is {'finished' if self._started else 'not reset'}")

    def _parse(self, reply: AgentReply) -> ParsedResponse:
        config = self.config
        if config.tools:
            return read_tool_calls(reply.tool_calls, reply.text, max_actions=config.max_actions_per_turn,
                                   max_chars=config.max_response_chars)
        return parse_response(
            reply.text,
            think=config.think,
            separator=config.action_separator,
            max_actions=config.max_actions_per_turn,
            max_chars=config.max_response_chars,
            split_actions=self._action_ids is not None,
        )

    def _to_action_id(self, name: str) -> ActionId | None:
        if self._action_ids is None:
            return name if self.env.action_space.contains(name) else None
        return self._action_ids.get(ascii_casefold(name))

    def _turn_block(self, turn: int, observation: Any, actions_left: int) -> str:
        return self.config.chat_template.turn.format(
            turn=turn, state=observation, actions_left=actions_left, format=self.config.output_format
        )

    def _append_turn_messages(self, parsed: ParsedResponse, turn_reward: float) -> None:
        template = self.config.chat_template
        observation = self._observation
        if self.config.tools:
            assistant = assistant_message(parsed, len(self._turns))
        else:
            assistant = {"role": "assistant", "content": parsed.normalized}
        self._transcript.append(assistant)
        reward_text = template.reward.format(reward=format_reward(turn_reward))
        if self._done:
            self._transcript.append(answer_message(assistant, reward_text + template.final_state.format(state=observation)))
            return
        actions_left = self.config.max_actions_per_episode - self._actions_taken
        block = self._turn_block(self.turn, observation, actions_left)
        self._user_blocks.append(block)
        self._transcript.append(answer_message(assistant, reward_text + block))
        self._draw()

    def _draw(self) -> None:
        """The current state's picture for the next request (``chat.images``), and its digest for the record."""
        self._png: bytes | None = None
        self._digest: str | None = None
        if not self.config.images:
            return
        if not draws_pictures(self.env):
            raise ValueError(f"chat.images: {self.env_id} draws no picture of its states (its render modes: "
                             f"{', '.join(self.env.unwrapped.metadata.get('render_modes', ())) or 'none'})")
        pixels = picture(self.env)
        self._png, self._digest = png_bytes(pixels), pixels_digest(pixels)

    def _windowed_prompt(self, window: int) -> list[dict[str, str]]:
        """System + intro, then only the last ``window`` turns (current one included).

        The first kept turn's state joins the intro in one user message, so the
        prompt keeps the system/user/assistant alternation every chat template needs.
        """
        transcript = self._transcript
        first = len(self._turns) + 1 - window  # 0-based index of the first kept turn
        # Turn j's user message sits at 1 + 2j and its reply at 2 + 2j.
        opening = {"role": "user", "content": self._intro + self._user_blocks[first]}
        return [transcript[0], opening, *transcript[2 + 2 * first :]]


def progress_of(info: Mapping[str, Any]) -> float | None:
    """The world's own score of the state, 0 to 1 (``info["progress"]``), or ``None`` for a world without one.

    A value outside [0, 1] is the env's bug, not the agent's: it raises instead of being clipped.
    """
    value = info.get("progress")
    if value is None:
        return None
    progress = float(value)
    if not 0.0 <= progress <= 1.0:
        raise ValueError(f"info['progress'] must be within [0, 1], got {value!r}")
    return progress


def info_lite(info: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON-safe scalar entries of a step ``info`` (numpy scalars as Python ones)."""
    lite = {}
    for key, value in info.items():
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, _INFO_SCALARS):
            lite[key] = value
    return lite


def format_reward(reward: float) -> str:
    """A reward as Python prints floats, minus summation noise: -0.30000000000000004 -> -0.3."""
    return str(round(float(reward), 6))


def action_lookup(action_names: Sequence[str] | None) -> dict[str, int] | None:
    if action_names is None:
        return None
    return {ascii_casefold(name): index for index, name in enumerate(action_names)}


@lru_cache(maxsize=1024)
def first_prompt_intro(
    config: ChatConfig,
    instruction: str,
    symbol_meanings: tuple[tuple[str, str], ...],
    action_names: tuple[str, ...] | None,
) -> str:
    """The static opening of the first user message, cached per (config, env declaration)."""
    template = config.chat_template
    symbols = ""
    if symbol_meanings:
        symbols = template.symbols_header + "".join(
            template.symbols_line.format(symbol=s, meaning=m) for s, m in symbol_meanings
        )
    if config.tools:
        actions = _tools_actions(config, action_names)
    elif action_names is None:
        actions = template.text_actions.format(per_episode=config.max_actions_per_episode)
    elif config.max_actions_per_turn == 1:
        per_episode = config.max_actions_per_episode
        actions = template.one_action.format(
            names=", ".join(action_names), example=action_names[0],
            episode_actions=f"{per_episode} action{'' if per_episode == 1 else 's'}",
        )
    else:
        actions = template.discrete_actions.format(
            names=", ".join(action_names),
            per_turn=config.max_actions_per_turn,
            separator=config.action_separator,
            per_episode=config.max_actions_per_episode,
            example=f" {config.action_separator} ".join(action_names[: min(2, config.max_actions_per_turn)]),
        )
    return template.intro.format(instruction=instruction, symbols=symbols, actions=actions)


def _tools_actions(config: ChatConfig, action_names: tuple[str, ...] | None) -> str:
    """The actions line of a tools-mode intro (``action_format="tools"``)."""
    template = config.chat_template
    if action_names is None:
        return template.tools_text_actions.format(per_episode=config.max_actions_per_episode)
    per_turn = config.max_actions_per_turn
    return template.tools_actions.format(
        names=", ".join(action_names), per_episode=config.max_actions_per_episode,
        turn_actions=f"{per_turn} action{'' if per_turn == 1 else 's'}",
        example=json.dumps(list(action_names[: min(2, per_turn)])),
    )
