"""RAGEN-2's context modes as the chat layer's one history setting, :attr:`ChatConfig.history_window`.

RAGEN-2 chooses how much of an episode a prompt shows with two keys (``agent_proxy.*`` in its
``config/base.yaml``): ``context_window_mode`` (``full``, ``limited_multi_turn``,
``single_turn``) and ``max_context_window`` (``k``; ``-1``: no limit).  ``ragen-bench eval``
and ``ragen-bench train`` take the same two keys on the command line and turn them into the
``chat.history_window`` they mean, so a run records (and its template hash digests) only the
setting its prompts were built from:

- ``full``: the whole conversation (``history_window=null``); ``k`` must stay ``-1``.
- ``limited_multi_turn``: the last ``k`` turns as chat messages, the current one included
  (``history_window=k``; ``k=-1``: the whole conversation).
- ``single_turn`` with ``k=1``: one user message with the current state only, the Markov
  prompt (``history_window=1``).  RAGEN-2's ``single_turn`` with ``k > 1`` (or ``-1``) writes
  the earlier turns as text into that one message, a layout the chat layer does not have:
  refused, naming ``limited_multi_turn`` with the same ``k`` as the nearest.
"""

from __future__ import annotations

from collections.abc import Sequence

CONTEXT_WINDOW_MODES = ("full", "limited_multi_turn", "single_turn")
MODE_KEY, WINDOW_KEY = "context_window_mode", "max_context_window"


def history_window(mode: str, max_context_window: int = -1) -> int | None:
    """The ``history_window`` of RAGEN-2's ``context_window_mode`` and ``max_context_window`` (ValueError naming the key)."""
    if mode not in CONTEXT_WINDOW_MODES:
        raise ValueError(f"{MODE_KEY} must be one of {', '.join(CONTEXT_WINDOW_MODES)}, got {mode!r}")
    k = max_context_window
    if isinstance(k, bool) or not isinstance(k, int) or (k < 1 and k != -1):
        raise ValueError(f"{WINDOW_KEY} must be -1 (no limit) or a number of turns >= 1, got {k!r}")
    if mode == "full":
        if k != -1:
            raise ValueError(f"{WINDOW_KEY}={k} needs {MODE_KEY}=limited_multi_turn or single_turn (full shows every turn)")
        return None
    if mode == "single_turn" and k != 1:
        raise ValueError(
            f"{WINDOW_KEY}={k} with {MODE_KEY}=single_turn writes earlier turns as text into one message, "
            f"which the chat layer does not lay out; use {WINDOW_KEY}=1 (the current state only) or "
            f"{MODE_KEY}=limited_multi_turn {WINDOW_KEY}={k} (the same turns as chat messages)"
        )
    return None if k == -1 else k


def translate(overrides: Sequence[str], error: type[ValueError] = ValueError) -> list[str]:
    """``overrides`` with ``context_window_mode=M`` / ``max_context_window=K`` replaced by the
    ``chat.history_window=...`` they map to; giving both them and ``chat.history_window`` is
    refused, as is ``max_context_window`` alone.  ``error``: the caller's exception type."""
    given: dict[str, str] = {}
    rest = []
    for override in overrides:
        key, _, value = override.lstrip("+").partition("=")
        if key in (MODE_KEY, WINDOW_KEY):
            given[key] = value
        else:
            rest.append(override)
    if not given:
        return rest
    if MODE_KEY not in given:
        raise error(f"{WINDOW_KEY}={given[WINDOW_KEY]} needs {MODE_KEY} (full, limited_multi_turn or single_turn)")
    if any(o.lstrip("+").partition("=")[0] == "chat.history_window" for o in rest):
        raise error(f"chat.history_window: give it or {MODE_KEY}, not both ({MODE_KEY} sets it)")
    raw = given.get(WINDOW_KEY, "-1")
    try:
        k = int(raw)
    except ValueError:
        raise error(f"{WINDOW_KEY} must be -1 (no limit) or a number of turns >= 1, got {raw!r}") from None
    try:
        window = history_window(given[MODE_KEY], k)
    except ValueError as problem:
        raise error(str(problem)) from None
    return [*rest, f"chat.history_window={'null' if window is None else window}"]
