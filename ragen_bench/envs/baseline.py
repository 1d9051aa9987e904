"""Scripted baselines that keep state: a policy built at reset from the level seed, asked once per state.

Where a family has no reference agent (Crafter, MiniHack/NetHack), ``baseline_action()`` (see
:mod:`ragen_bench.envs.base`) follows a scripted policy instead.  Such a policy remembers what it saw
(the explorer its visited cells, the collector its wandering generator), so two rules keep an
episode's baseline actions a function of its seed alone:

* the policy is rebuilt at every reset from ``level_seed`` (``make_baseline(seed)``), and
* it is asked at most once per state: the answer is kept until the next step, so a caller may ask
  again (a test, a view, a replay) without advancing the policy's memory or generator.

The policy sees every state it is asked in; one that is not asked in some state (an agent that does
not follow it) simply plans from the states it saw.
"""

from __future__ import annotations

from typing import Any, Protocol


class BaselinePolicy(Protocol):
    def act(self, env: Any) -> int:
        """The next action (an index of ``env.action_names``) from the live env's current state."""


class SeededBaseline:
    """Mixin placed before :class:`~ragen_bench.envs.base.TextEnv`: ``baseline_action()`` by ``make_baseline``."""

    _baseline: BaselinePolicy | None = None
    _baseline_next: int | None = None  # the policy's answer in the current state, once asked

    def make_baseline(self, seed: int) -> BaselinePolicy:
        """The family's baseline policy for the episode of ``seed``."""
        raise NotImplementedError

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[str, dict[str, Any]]:
        result = super().reset(seed=seed, options=options)  # type: ignore[misc]
        self._baseline, self._baseline_next = self.make_baseline(self.level_seed), None  # type: ignore[attr-defined]
        return result

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        result = super().step(action)  # type: ignore[misc]
        self._baseline_next = None
        return result

    def baseline_action(self, steps_left: int | None = None) -> int | None:
        """The scripted policy's next action (``None`` before the first reset); ``steps_left`` is not used."""
        if self._baseline is None:
            return None
        if self._baseline_next is None:
            self._baseline_next = int(self._baseline.act(self))
        return self._baseline_next
