"""What every ragen-bench text environment declares, beyond the Gymnasium API.

The chat layer (``ragen_bench.chat``) knows environments only through Gymnasium's
``reset``/``step`` plus these class/instance attributes, so a new family needs no
change anywhere else:

``action_names``
    Tuple of action names; index ``i`` is the id of ``Discrete`` action ``i``.
    ``None`` for free-text action spaces (e.g. Countdown's equations).
``symbol_meanings``
    Mapping from each grid symbol to its meaning (``{"#": "wall", ...}``); empty
    for envs whose observation is prose.
``instruction``
    One paragraph in the project's own words: the goal and the rules.
``optimal_action(steps_left=None)``
    The next action of an optimal policy from the current state (``int`` for
    discrete envs, ``str`` for text envs), or ``None`` when no optimal action is
    known.  ``steps_left`` caps the remaining horizon (the chat layer's action budget)
    where the optimal choice depends on it.  Powers the ``optimal`` agent.
``optimal_plan(max_actions)`` (optional, deterministic envs only)
    The next ``max_actions`` actions of an optimal plan, so the ``optimal`` agent
    can fill a multi-action turn without copying the env.

Observations are ``str``; ``render_mode="ansi"`` returns the same text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import gymnasium


class TextEnv(gymnasium.Env):
    """Base for single-agent text envs: declares the chat-facing attributes."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}
    action_names: tuple[str, ...] | None = None
    symbol_meanings: Mapping[str, str] = {}
    instruction: str = ""

    def optimal_action(self, steps_left: int | None = None) -> Any:
        """Next action of an optimal policy, or ``None`` if unknown."""
        return None


def text_charset(*texts: str) -> frozenset[str]:
    """The characters a ``spaces.Text`` observation space must allow."""
    chars: set[str] = set()
    for text in texts:
        chars.update(text)
    return frozenset(chars)
