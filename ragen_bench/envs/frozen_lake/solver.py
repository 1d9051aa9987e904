"""FrozenLake's transition model and finite-horizon value iteration.

Lakes, states and actions are as in :mod:`ragen_bench.envs.frozen_lake.levels`.

The environment steps with :func:`transition_table`, so the model the solver optimises
is, by construction, the model the agent plays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragen_bench.envs.frozen_lake.levels import TERMINAL_LETTERS, cell, neighbour

# Probability of moving as intended on slippery ice; the rest splits evenly between the
# two perpendicular directions.  Computed as Gymnasium computes it, so the cumulative
# sums the sampler compares against are bit-identical.
SLIP_SUCCESS_RATE = 1.0 / 3.0
SLIP_FAIL_RATE = (1.0 - SLIP_SUCCESS_RATE) / 2.0

Outcome = tuple[float, int]  # (probability, next state)


def transition_table(desc: tuple[str, ...], slippery: bool) -> tuple[tuple[tuple[Outcome, ...], ...], ...]:
    """``table[state][action]`` = outcomes, in the order the sampler walks them.

    Slippery moves list (action - 1, action, action + 1) mod 4, Gymnasium's order; a
    hole or the goal is absorbing (one outcome: stay).
    """
    n_states = len(desc) * len(desc[0])
    moved_to = [[neighbour(desc, state, action) for action in range(4)] for state in range(n_states)]
    table = []
    for state in range(n_states):
        if cell(desc, state) in TERMINAL_LETTERS:
            table.append((((1.0, state),),) * 4)
        elif slippery:
            table.append(
                tuple(
                    tuple(
                        (SLIP_SUCCESS_RATE if moved == action else SLIP_FAIL_RATE, moved_to[state][moved])
                        for moved in ((action - 1) % 4, action, (action + 1) % 4)
                    )
                    for action in range(4)
                )
            )
        else:
            table.append(tuple(((1.0, moved_to[state][action]),) for action in range(4)))
    return tuple(table)


def sample_outcome(outcomes: tuple[Outcome, ...], uniform: float) -> int:
    """The next state for one uniform draw in [0, 1).

    Gymnasium's categorical rule, ``argmax(cumsum(p) > u)``, in plain Python: the running
    sum adds in the same order as ``numpy.cumsum``, so the comparisons are bit-identical,
    and like ``argmax`` over all-false it falls back to the first outcome.
    """
    cumulative = 0.0
    for probability, next_state in outcomes:
        cumulative += probability
        if cumulative > uniform:
            return next_state
    return outcomes[0][1]


@dataclass(frozen=True)
class LakeSolution:
    """Optimal success probabilities of a lake for every state and step budget.

    ``values[k, s]`` is the highest probability of reaching the goal from ``s`` within
    ``k`` more steps; ``soonness[k, s]`` = sum of ``values[j, s]`` for ``j <= k``, the
    tie-breaker that prefers reaching the goal sooner among equally likely plans.
    """

    values: np.ndarray
    soonness: np.ndarray
    table: tuple[tuple[tuple[Outcome, ...], ...], ...]

    @property
    def horizon(self) -> int:
        return self.values.shape[0] - 1

    def success_probability(self, state: int, steps_left: int | None = None) -> float:
        steps = self.horizon if steps_left is None else min(max(steps_left, 0), self.horizon)
        return float(self.values[steps, state])

    def best_action(self, state: int, steps_left: int | None = None) -> int:
        """An optimal action with ``steps_left`` steps to go (lowest id among exact ties)."""
        steps = self.horizon if steps_left is None else min(max(steps_left, 1), self.horizon)
        scores = [
            (
                sum(p * self.values[steps - 1, nxt] for p, nxt in outcomes),
                sum(p * self.soonness[steps - 1, nxt] for p, nxt in outcomes),
            )
            for outcomes in self.table[state]
        ]
        best_value = max(value for value, _ in scores)
        # Values equal up to float noise are ties; among them prefer reaching the goal sooner.
        tied = [a for a, (value, _) in enumerate(scores) if value >= best_value - 1e-12]
        best_soon = max(scores[a][1] for a in tied)
        return next(a for a in tied if scores[a][1] >= best_soon - 1e-9)


def solve(desc: tuple[str, ...], slippery: bool, horizon: int) -> LakeSolution:
    """Finite-horizon value iteration: exact optimal success probability within ``horizon`` steps."""
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon}")
    table = transition_table(desc, slippery)
    n_states = len(table)
    # Dense (state, action, next state) probabilities make each backup one matrix product.
    probs = np.zeros((n_states, 4, n_states))
    for state, per_action in enumerate(table):
        for action, outcomes in enumerate(per_action):
            for p, nxt in outcomes:
                probs[state, action, nxt] += p
    is_goal = np.array([cell(desc, s) == "G" for s in range(n_states)])
    is_terminal = np.array([cell(desc, s) in TERMINAL_LETTERS for s in range(n_states)])

    values = np.zeros((horizon + 1, n_states))
    values[0] = is_goal
    for k in range(1, horizon + 1):
        best = (probs @ values[k - 1]).max(axis=1)
        values[k] = np.where(is_terminal, is_goal.astype(float), best)
        if np.array_equal(values[k], values[k - 1]):  # a fixed point: every later row is the same
            values[k + 1 :] = values[k]
            break
    return LakeSolution(values=values, soonness=np.cumsum(values, axis=0), table=table)
