"""FrozenLake's transition model and finite-horizon value iteration.

Lakes, states and actions are as in :mod:`ragen_bench.envs.frozen_lake.levels`.

The environment steps with :func:`outcomes`, the rows of :func:`transition_table`, so
the model the solver optimises is, by construction, the model the agent plays.

Nothing here runs on reset: the env asks for a :func:`solve` only when the optimal
policy or the success probability is wanted, and solutions are cached per lake.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ragen_bench.envs.frozen_lake.levels import TERMINAL_LETTERS, cell, neighbours

# Probability of moving as intended on slippery ice (Gymnasium's default, RAGEN v1's; RAGEN-2
# passes 0.8); the rest splits evenly between the two perpendicular directions.
SLIP_SUCCESS_RATE = 1.0 / 3.0

Outcome = tuple[float, int]  # (probability, next state)


def outcomes(
    desc: tuple[str, ...], state: int, action: int, slippery: bool, success_rate: float = SLIP_SUCCESS_RATE
) -> tuple[Outcome, ...]:
    """Where ``action`` from ``state`` may lead, in the order the sampler walks them.

    Slippery moves list (action - 1, action, action + 1) mod 4, Gymnasium's order, with
    probabilities ``success_rate`` for the intended one and half the rest for each other,
    computed as Gymnasium computes them, so the cumulative sums the sampler compares
    against are bit-identical.  A hole or the goal is absorbing (one outcome: stay).
    """
    if cell(desc, state) in TERMINAL_LETTERS:
        return ((1.0, state),)
    moved_to = neighbours(len(desc), len(desc[0]))[state]
    if slippery:
        fail_rate = (1.0 - success_rate) / 2.0
        return (
            (fail_rate, moved_to[(action - 1) % 4]),
            (success_rate, moved_to[action]),
            (fail_rate, moved_to[(action + 1) % 4]),
        )
    return ((1.0, moved_to[action]),)


def transition_table(
    desc: tuple[str, ...], slippery: bool, success_rate: float = SLIP_SUCCESS_RATE
) -> tuple[tuple[tuple[Outcome, ...], ...], ...]:
    """``table[state][action]`` = :func:`outcomes` of every state and action."""
    n_states = len(desc) * len(desc[0])
    return tuple(
        tuple(outcomes(desc, state, action, slippery, success_rate) for action in range(4)) for state in range(n_states)
    )


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

    Immutable (the arrays are read-only), so one solution is shared by every env and
    every copy of an env playing the lake: copying returns the solution itself.
    """

    values: np.ndarray
    soonness: np.ndarray
    table: tuple[tuple[tuple[Outcome, ...], ...], ...]

    def __copy__(self) -> LakeSolution:
        return self

    def __deepcopy__(self, memo: dict) -> LakeSolution:
        return self

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


# Solutions kept, least recently used first, up to a memory bound rather than a count:
# an 8x8 lake at the default 100 steps takes ~100 KB of tables (~650 fit), a 32x32 one
# at 10,000 steps 160 MB (never kept).  Envs also hold their current lake's solution,
# so a lock-step batch wider than the cache never solves a lake twice in an episode.
CACHE_BYTES = 64 * 2**20
_cache: OrderedDict[tuple[tuple[str, ...], bool, int, float], LakeSolution] = OrderedDict()
_cache_bytes = 0
_cache_lock = threading.Lock()


def solve(
    desc: tuple[str, ...], slippery: bool, horizon: int, success_rate: float = SLIP_SUCCESS_RATE
) -> LakeSolution:
    """Finite-horizon value iteration: exact optimal success probability within ``horizon`` steps.

    Cached per (lake, slippery, horizon, success rate) (see ``CACHE_BYTES``): pass@k
    samples and GRPO groups replaying a lake solve it once.
    """
    global _cache_bytes
    key = (tuple(desc), bool(slippery), int(horizon), float(success_rate))
    with _cache_lock:
        solution = _cache.get(key)
        if solution is not None:
            _cache.move_to_end(key)
            return solution
    solution = _value_iteration(*key)
    size = solution.values.nbytes + solution.soonness.nbytes
    with _cache_lock:
        if size <= CACHE_BYTES and key not in _cache:
            _cache[key] = solution
            _cache_bytes += size
            while _cache_bytes > CACHE_BYTES:
                _, evicted = _cache.popitem(last=False)
                _cache_bytes -= evicted.values.nbytes + evicted.soonness.nbytes
    return solution


def _value_iteration(desc: tuple[str, ...], slippery: bool, horizon: int, success_rate: float) -> LakeSolution:
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon}")
    table = transition_table(desc, slippery, success_rate)
    n_states = len(table)
    # Dense (state, action, next state) probabilities make each backup one matrix product.
    probs = np.zeros((n_states, 4, n_states))
    for state, per_action in enumerate(table):
        for action, possible in enumerate(per_action):
            for p, nxt in possible:
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
    soonness = np.cumsum(values, axis=0)
    values.flags.writeable = soonness.flags.writeable = False
    return LakeSolution(values=values, soonness=soonness, table=table)
