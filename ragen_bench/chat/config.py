"""Chat configuration and prompt templates.

Every limit, penalty and piece of prompt text lives here, so a result can name exactly
the prompts it was produced with: :meth:`ChatConfig.template_hash` digests the template
texts together with every config field.

The default template follows RAGEN's conversation shape (``ragen/llm_agent/
ctx_manager.py``), in this project's own words:

* a short system message;
* a first user message: the env's instruction, the meaning of each symbol, the
  available actions, the per-turn and per-episode action budgets, then ``Turn 1``;
* per turn: ``Turn k``, the state, the actions left and the required output format;
* after each assistant turn, the next user message opens with the reward that turn
  earned (env rewards only; the format penalty is bookkeeping, as in RAGEN).

With ``action_format="tools"`` the agent acts by calling the ``act`` function
(:mod:`ragen_bench.chat.tools`) instead of writing ``<answer>``: the ``tools_*`` and
``format_tools_*`` texts replace the action and format lines.  A text-mode config hashes
exactly as it did before the tools mode existed (neither those texts nor the field enter
its hash), so older runs resume and verify.
"""

from __future__ import annotations

import hashlib
import json
import typing
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from ragen_bench import registry, values
from ragen_bench.chat.parser import TAGS


@dataclass(frozen=True)
class ChatTemplate:
    """The text pieces of a prompt template (``str.format`` fields in braces).

    ``intro`` opens the first user message; ``symbols_line`` (one per symbol),
    ``discrete_actions`` and ``text_actions`` fill its ``{symbols}`` and
    ``{actions}`` fields.  ``turn`` is added for every turn, ``reward`` opens every
    user message after an assistant turn and ``final_state`` closes the transcript.
    """

    system: str
    intro: str
    symbols_header: str
    symbols_line: str
    discrete_actions: str
    text_actions: str
    turn: str
    format_think: str
    format_no_think: str
    reward: str
    final_state: str
    # The actions line when a reply may name one action (discrete_actions would say "up to 1 actions");
    # ``{episode_actions}`` is the episode's allowance with its noun ("1 action", "20 actions").
    one_action: str
    # action_format="tools": the actions line of a discrete env (``{turn_actions}``: "1 action",
    # "5 actions"), of a free-text env, and the per-turn format reminders.
    tools_actions: str
    tools_text_actions: str
    format_tools_think: str
    format_tools_no_think: str


DEFAULT_TEMPLATE = ChatTemplate(
    system="You are an agent playing a text game. Read each state carefully and answer in the required format.",
    intro="{instruction}\n{symbols}{actions}",
    symbols_header="Symbols in the state:\n",
    symbols_line="{symbol}: {meaning}\n",
    discrete_actions=(
        "Actions you can take: {names}.\n"
        'Each turn you may take up to {per_turn} actions, separated by "{separator}"; '
        "the whole episode allows {per_episode} actions. Action names are not case-sensitive.\n"
        # A concrete answer, as RAGEN's instructions give one: small models copy the
        # bracketed placeholders of the format line otherwise.
        "For example: <answer>{example}</answer>\n"
    ),
    text_actions=(
        "Each turn, your answer is a single action written as free text.\n"
        "The whole episode allows {per_episode} actions.\n"
    ),
    turn=(
        "\nTurn {turn}:\nState:\n{state}\n"
        "Actions left: {actions_left}. Reply exactly in this format, with nothing else: {format}\n"
    ),
    format_think="<think> [your reasoning] </think> <answer> [your actions] </answer>",
    format_no_think="<answer> [your actions] </answer>",
    reward="Reward: {reward}\n",
    final_state="\nFinal state:\n{state}\n",
    one_action=(
        "Actions you can take: {names}.\n"
        "Each turn you may take one action; the whole episode allows {episode_actions}. "
        "Action names are not case-sensitive.\n"
        "For example: <answer>{example}</answer>\n"
    ),
    tools_actions=(
        "Actions you can take: {names}.\n"
        "Act by calling the act tool with a list of up to {turn_actions} in its actions argument; "
        "the whole episode allows {per_episode} actions. Action names are not case-sensitive. "
        "Do not write <answer> tags.\n"
        'For example: act({{"actions": {example}}})\n'
    ),
    tools_text_actions=(
        "Each turn, act by calling the act tool with one action, written as free text, in its actions list.\n"
        "The whole episode allows {per_episode} actions. Do not write <answer> tags.\n"
    ),
    format_tools_think="<think> [your reasoning] </think>, then one call of the act tool",
    format_tools_no_think="one call of the act tool",
)

TEMPLATES: dict[str, ChatTemplate] = {"default": DEFAULT_TEMPLATE}


# How an agent names its actions: "text" in an <answer> block, "tools" by a call of the act function.
ACTION_FORMATS = ("text", "tools")
_TOOLS_TEXTS = ("tools_actions", "tools_text_actions", "format_tools_think", "format_tools_no_think")

# Largest |format_penalty|: far beyond any useful penalty, small enough that no sum overflows.
MAX_FORMAT_PENALTY = 1e6


@dataclass(frozen=True)
class ChatConfig:
    """Limits, penalties and template choice for one chat episode.

    Defaults are RAGEN's (``config/base.yaml`` and ``config/envs.yaml``): 5 turns, up
    to 5 actions per turn, 10 actions per episode, -0.1 format penalty, thinking on,
    full history.  ``history_window=k`` shows only the last ``k`` turns (the current
    one included) after the first user message's static intro; ``k=1`` is a Markov
    prompt.  Model text is cut to ``max_response_chars`` before it is parsed.
    """

    max_turns: int = values.documented(5, help="the most turns (model replies) of an episode")
    max_actions_per_turn: int = values.documented(5, help="the most actions one reply may take")
    max_actions_per_episode: int = values.documented(10, help="the most actions of an episode")
    format_penalty: float = values.documented(-0.1, help="added to a malformed turn's reward; must be <= 0")
    think: bool = values.documented(True, help="true: the reply reasons in <think> before its <answer>; "
                                    "false: the no-think template, an <answer> only")
    history_window: int | None = values.documented(None, help="null: the full history; k: the last k turns "
                                                   "(RAGEN-2's max_context_window)")
    max_response_chars: int = values.documented(4096, help="model text is cut to this many characters before "
                                                "it is parsed")
    template: str = values.documented("default", help=f"the prompt template: {', '.join(TEMPLATES)}")
    action_separator: str = values.documented("||", help="separates the actions inside one <answer>")
    action_format: str = values.documented("text", help="text: the reply names its actions in <answer>; tools: "
                                           "it calls the act function (OpenAI tools schema; eval of single-agent "
                                           "envs only, docs/eval.md)")
    images: bool = values.documented(False, help="true: each request also carries a picture of the current state "
                                     "(PNG; ragen_bench/chat/images.py) for vision models; eval of ids that draw "
                                     "their states only (render_modes lists rgb_array)")

    def __post_init__(self) -> None:
        for name in ("max_turns", "max_actions_per_turn", "max_actions_per_episode", "max_response_chars"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.history_window is not None and self.history_window < 1:
            raise ValueError(f"history_window must be None or >= 1, got {self.history_window}")
        if self.template not in TEMPLATES:
            raise ValueError(f"unknown template {self.template!r}; known: {', '.join(sorted(TEMPLATES))}")
        if self.action_format not in ACTION_FORMATS:
            raise ValueError(f"action_format must be one of {', '.join(ACTION_FORMATS)}, got {self.action_format!r}")
        if not self.action_separator.strip():
            raise ValueError("action_separator must contain a visible character")
        # A separator holding a tag would cut the answer block it is meant to split.
        if any(tag in self.action_separator for tag in TAGS):
            raise ValueError(f"action_separator must not contain a chat tag ({', '.join(TAGS)})")
        # Bounded so an episode's summed penalties stay finite (-1e308 per turn
        # summed to -inf, which JSON cannot hold); rewards here are of order 10.
        if not -MAX_FORMAT_PENALTY <= self.format_penalty <= MAX_FORMAT_PENALTY:
            raise ValueError(
                f"format_penalty must be a number in [-{MAX_FORMAT_PENALTY:g}, {MAX_FORMAT_PENALTY:g}], "
                f"got {self.format_penalty!r}"
            )

    @property
    def chat_template(self) -> ChatTemplate:
        return TEMPLATES[self.template]

    @property
    def tools(self) -> bool:
        """Whether the agent acts by tool calls (``action_format="tools"``)."""
        return self.action_format == "tools"

    @property
    def output_format(self) -> str:
        """The format reminder shown every turn (think or no-think variant, text or tools)."""
        template = self.chat_template
        if self.tools:
            return template.format_tools_think if self.think else template.format_tools_no_think
        return template.format_think if self.think else template.format_no_think

    def to_dict(self) -> dict[str, object]:
        """Every field; ``ChatConfig(**config.to_dict())`` rebuilds it (records keep :func:`recorded_chat` of it)."""
        return asdict(self)

    def template_hash(self) -> str:
        """sha256 (hex) of the template texts plus every config field."""
        return _template_hash(self)


def check_chat(settings: Any, error: type[Exception] = ValueError) -> ChatConfig:
    """The :class:`ChatConfig` of a config's ``chat`` settings, every rule checked; eval and train both use it.

    ``settings`` must be a mapping of ChatConfig fields, each value of its field's declared
    type (:func:`ragen_bench.values.conform`), with a format penalty that is no reward
    (``<= 0``), and must make a valid ChatConfig.  Anything else raises ``error`` (the
    caller's exception type) with one line that names the key (``chat.<field>``).  The
    ChatConfig holds the values as given (``-1`` stays an int), so its
    :meth:`~ChatConfig.template_hash` is the one the settings always had.
    """
    if not isinstance(settings, Mapping):
        raise error(f"chat must be a mapping of ChatConfig fields, got {settings!r}")
    hints = typing.get_type_hints(ChatConfig)
    for key, value in settings.items():
        if key not in hints:
            raise error(f"chat.{key}: unknown key; ChatConfig fields: {', '.join(hints)}")
        try:
            values.conform(value, hints[key])
        except values.Mismatch as mismatch:
            raise error(f"chat.{key} must be {mismatch.expected}, got {value!r}") from None
    # A penalty that is positive pays the model for malformed replies.
    if settings.get("format_penalty", 0) > 0:
        raise error(f"chat.format_penalty must be <= 0 (it is a penalty), got {settings['format_penalty']!r}")
    try:
        return ChatConfig(**settings)
    except (TypeError, ValueError) as problem:
        # ChatConfig's messages start with the field's name; name it as a key.
        message = str(problem)
        raise error(f"chat.{message}" if message.split(" ", 1)[0] in hints else f"chat: {message}") from None


# Fields added after runs were recorded, with the default that leaves them out of a record.
_LATE_DEFAULTS = {"action_format": "text", "images": False}


def recorded_chat(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``chat`` settings as a run records them: ``action_format`` only when it is not ``text``, ``images``
    only when true.

    Runs recorded before those fields existed hold no such keys; leaving the defaults out keeps
    their identity, manifest and ``config.json`` byte-identical, so they resume and verify.
    """
    return {key: value for key, value in settings.items()
            if not (key in _LATE_DEFAULTS and _is_default(value, _LATE_DEFAULTS[key]))}


def _is_default(value: object, default: object) -> bool:
    return type(value) is type(default) and value == default


def budgeted_settings(env_id: str, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``chat`` settings to play ``env_id`` with: the id's declared budget, ``overrides`` on top.

    The budget is :func:`ragen_bench.registry.chat_budget`'s :class:`~ragen_bench.registry.ChatBudget`
    (its ChatConfig fields; the id's ``max_new_tokens`` is the agent's to apply).  ``overrides``
    are the keys the user set (``chat.max_turns=3``): each one wins over the budget.  Keys
    neither gives keep ChatConfig's defaults.  Pass the result to :func:`check_chat`.
    """
    return {**registry.chat_budget(env_id).chat_fields(), **(overrides or {})}


@lru_cache(maxsize=256)
def _template_hash(config: ChatConfig) -> str:
    template = asdict(config.chat_template)
    if config.max_actions_per_turn != 1:
        # The one-action text is shown only at one action per reply: every other config keeps the hash it
        # had before that text existed, as its prompts are the same.
        del template["one_action"]
    if not config.tools:
        for name in _TOOLS_TEXTS:
            del template[name]
    payload = {"template": template, "config": recorded_chat(config.to_dict())}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=True).encode()
    return hashlib.sha256(blob).hexdigest()
