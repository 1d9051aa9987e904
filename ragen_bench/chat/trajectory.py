"""The record of one chat episode, and its rendering to training tensors.

A :class:`Trajectory` is plain data and is what both the eval harness writes and the
trainer consumes.  It round-trips exactly through :meth:`Trajectory.to_dict`,
``json.dumps(..., ensure_ascii=True)``, ``json.loads`` and :meth:`Trajectory.from_dict`
whatever the model wrote: lone surrogates, NUL, control and bidi characters are escaped
by ``ensure_ascii`` (a UTF-8 encoder would refuse a lone surrogate).  One case JSON
cannot carry: a high surrogate followed by a low one (two code points in Python) reads
back as the single character they encode.  :meth:`~Trajectory.to_dict` therefore writes
a text holding such a pair as ``{"unicode_escape": <its unicode_escape encoding>}``;
every other text is written as itself.

:meth:`Trajectory.tokenize` lays it out in the trainer's token layout
(:mod:`ragen_bench.chat.tokens`), with the loss mask on each reply and its end-of-turn id.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields
from typing import Any

from ragen_bench.chat.tokens import TokenLayout

ActionId = int | str  # Discrete envs: the action index; free-text envs: the answer string

ESCAPED_TEXT_KEY = "unicode_escape"
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


@dataclass
class TurnRecord:
    """One assistant turn.

    ``raw_response`` is the model text cut to ``max_response_chars``
    (``response_chars`` keeps the original length).  ``parsed_actions`` are the
    action strings the reply named; ``action_ids`` the ones executed, in order, with
    one ``env_rewards`` entry each.  ``valid`` is true when the reply was well formed
    and every named action was valid (at least one).  ``format_penalty`` is 0.0 or the
    configured penalty.  ``finish_reason`` is the agent's account of why its reply ended
    (``"length"``: cut by the token limit; ``None``: unknown, and in records written
    before the field existed).  ``null_content`` marks a reply that carried no text (a
    server's null ``content``; the turn is malformed) and ``refusal`` is the refusal text
    the server sent with it; both appear in :meth:`to_dict` only when set, so ordinary
    turns are written as they were before these fields existed.  ``tool_calls`` are the
    reply's function calls as the agent sent them (``chat.action_format=tools`` only; else
    ``None`` and, likewise, not written).  ``image_sha256`` is the digest of the picture the
    turn's request showed (``chat.images`` only, :func:`ragen_bench.chat.images.pixels_digest`;
    else ``None``, not written).  ``info`` is the last step's info, keeping scalar values only.
    """

    raw_response: str
    normalized_response: str
    parsed_actions: list[str]
    valid: bool
    action_ids: list[ActionId]
    env_rewards: list[float]
    format_penalty: float
    num_effective_actions: int = 0
    response_chars: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    null_content: bool = False
    refusal: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    image_sha256: str | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def reward(self) -> float:
        """Env rewards of this turn plus its format penalty."""
        return sum(self.env_rewards) + self.format_penalty

    def to_dict(self) -> dict[str, Any]:
        # Hand-written rather than dataclasses.asdict: records are written at eval
        # throughput, and asdict's generic recursion costs more than the episode.
        data = dict(vars(self))
        for name in ("raw_response", "normalized_response", "finish_reason"):
            data[name] = pack_text(data[name])
        data["parsed_actions"] = [pack_text(action) for action in self.parsed_actions]
        data["action_ids"] = [pack_text(action) for action in self.action_ids]
        data["env_rewards"] = list(self.env_rewards)
        data["info"] = {key: pack_text(value) for key, value in self.info.items()}
        if not self.null_content:
            del data["null_content"]
        if self.refusal is None:
            del data["refusal"]
        else:
            data["refusal"] = pack_text(self.refusal)
        if self.tool_calls is None:
            del data["tool_calls"]
        else:
            # JSON data that round-trips (the protocol's rule): a deep copy the record does not share.
            data["tool_calls"] = json.loads(json.dumps(self.tool_calls))
        if self.image_sha256 is None:
            del data["image_sha256"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TurnRecord:
        """The inverse of :meth:`to_dict` (a field a record lacks takes its default, e.g. ``finish_reason=None``)."""
        values = dict(data)
        for name in ("raw_response", "normalized_response", "finish_reason", "refusal"):
            if name in values:
                values[name] = unpack_text(values[name])
        for name in ("parsed_actions", "action_ids"):
            values[name] = [unpack_text(item) for item in values[name]]
        values["info"] = {key: unpack_text(value) for key, value in values.get("info", {}).items()}
        return cls(**values)


@dataclass
class Trajectory:
    """One finished (or abandoned) chat episode.

    ``messages`` is the full transcript: system, first user message, then assistant
    and user messages alternating; the last user message carries the final reward and
    state.  ``total_reward`` sums env rewards and format penalties.  ``num_actions``
    counts executed env steps; ``num_valid_actions`` counts parsed actions that named
    a valid action (executed or cut by the episode budget).  ``terminated`` is the
    env's own ending; ``truncated`` covers the env's time limit and the chat budgets
    (turns, actions) running out first.

    ``progress`` is the world's own score of the episode, 0 to 1, where the env reports one
    (``info["progress"]`` after the last step: Crafter's achievements, TextWorld's points,
    NetHack's progression, as BALROG scores them); ``None`` for every other env, whose episodes
    are scored by ``success`` alone.  It is written only when set, so the records of every
    other world read and replay exactly as they did before the field existed.
    """

    env_id: str
    split: str
    seed: int
    sample: int
    template_hash: str
    messages: list[dict[str, Any]]
    turns: list[TurnRecord]
    success: bool
    total_reward: float
    num_turns: int
    num_actions: int
    num_valid_actions: int
    num_effective_actions: int
    optimal_length: int | None
    terminated: bool
    truncated: bool
    progress: float | None = None

    @property
    def scored_progress(self) -> float:
        """What eval's metrics average for this episode (:func:`scored_progress`)."""
        return scored_progress(self.success, self.progress)

    @property
    def episode_key(self) -> str:
        return episode_key(self.env_id, self.split, self.seed, self.sample)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; shares nothing mutable with the record."""
        data = dict(vars(self))
        if self.progress is None:
            del data["progress"]
        data["messages"] = [{key: _pack_message_value(value) for key, value in message.items()}
                            for message in self.messages]
        data["turns"] = [turn.to_dict() for turn in self.turns]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        values = {f.name: data[f.name] for f in fields(cls) if f.name != "progress"}
        values["progress"] = data.get("progress")
        values["messages"] = [{key: unpack_text(text) for key, text in message.items()} for message in data["messages"]]
        values["turns"] = [TurnRecord.from_dict(turn) for turn in data["turns"]]
        return cls(**values)

    def training_messages(self) -> list[dict[str, str]]:
        """The transcript up to the last assistant turn (what a policy update sees)."""
        last = max((i for i, m in enumerate(self.messages) if m["role"] == "assistant"), default=-1)
        return self.messages[: last + 1]

    def tokenize(self, tokenizer: Any, *, score_placement: str = "last") -> dict[str, list[Any]]:
        """``input_ids``, ``attention_mask``, ``loss_mask`` and ``scores`` as lists.

        The row is the trainer's token layout (:meth:`ragen_bench.chat.tokens.TokenLayout.record_ids`)
        of :meth:`training_messages`, each reply re-encoded from its text: ``loss_mask`` is 1
        exactly on each reply and its end-of-turn id, and the row ends on the last reply's.
        ``scores`` is 0 everywhere except: with ``score_placement="last"``, ``total_reward``
        on the last reply's end-of-turn id; with ``"turn"``, each turn's reward (env rewards
        + penalty) on that turn's.  Templates the layout refuses (not prefix-stable, or not
        closing replies with the tokenizer's eos token) raise ``ValueError``.

        The whole transcript is laid out as one sequence.  Under a ``history_window``
        each reply was generated from a shorter prompt than the one laid out here.
        """
        if score_placement not in ("last", "turn"):
            raise ValueError(f"score_placement must be 'last' or 'turn', got {score_placement!r}")
        input_ids, mask = TokenLayout(tokenizer).record_ids(self.training_messages())
        turn_ends = [i for i, masked in enumerate(mask) if masked and (i + 1 == len(mask) or not mask[i + 1])]
        scores = [0.0] * len(input_ids)
        if score_placement == "last":
            scores[turn_ends[-1]] = self.total_reward
        else:
            for position, turn in zip(turn_ends, self.turns):
                scores[position] += turn.reward
        return {
            "input_ids": input_ids,
            "attention_mask": [1] * len(input_ids),
            "loss_mask": [int(masked) for masked in mask],
            "scores": scores,
        }


def scored_progress(success: bool, progress: float | None) -> float:
    """An episode's progress as eval scores it: the world's own score where it has one, else success as 1 or 0
    (BALROG's rule, so one number scores every world)."""
    return float(success) if progress is None else float(progress)


def pack_text(value: Any) -> Any:
    """``value`` as JSON carries it exactly: a text with a surrogate pair escaped, anything else as is."""
    if type(value) is str and not value.isascii() and _SURROGATE_PAIR.search(value):
        return {ESCAPED_TEXT_KEY: value.encode("unicode_escape").decode("ascii")}
    return value


def _pack_message_value(value: object) -> object:
    # A tools-mode assistant message's tool_calls are JSON data (tools.assistant_message): copied, not shared.
    return pack_text(value) if type(value) is str else json.loads(json.dumps(value))


def unpack_text(value: Any) -> Any:
    """The inverse of :func:`pack_text`."""
    if type(value) is dict and ESCAPED_TEXT_KEY in value:
        return value[ESCAPED_TEXT_KEY].encode("ascii").decode("unicode_escape")
    return value


def episode_key(env_id: str, split: str, seed: int, sample: int) -> str:
    """Stable name of an episode, e.g. ``"RAGEN/Sokoban-6x6-v0/test/123/0"``."""
    return f"{env_id}/{split}/{seed}/{sample}"
