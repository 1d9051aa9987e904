"""Checks every text env family must pass, shared by the per-family test files.

Each family test calls these with its own ids and a few valid actions, so the
contract (Gymnasium checker, cross-process determinism, untouched global RNGs, the
chat-facing attributes) is written once.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium.utils.env_checker import check_env

from tests.conftest import run_python


def assert_check_env_clean(env_id: str) -> None:
    """Gymnasium's checker passes on the raw env and on ``make``'s checked wrapper, silently."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gymnasium.make(env_id)
        check_env(env.unwrapped, skip_render_check=False)
        # The passive checker inside make() inspects the first reset and step.
        obs, info = env.reset(seed=0)
        env.step(env.action_space.sample() if env.unwrapped.action_names is None else 0)
        env.close()


def assert_chat_attributes(env_id: str) -> None:
    """What the chat layer reads: names, symbols, instruction, the optimal action."""
    env = gymnasium.make(env_id).unwrapped
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs) and env.render_text() == obs  # what ansi mode renders
    assert info["success"] is False and "optimal_length" in info
    assert isinstance(env.instruction, str) and len(env.instruction) > 40
    assert all(symbol in env.observation_space.character_set for symbol in env.symbol_meanings)
    if env.action_names is None:
        assert isinstance(env.action_space, gymnasium.spaces.Text)
        assert isinstance(env.optimal_action(), str)
    else:
        assert len(env.action_names) == env.action_space.n
        assert env.optimal_action() in range(env.action_space.n)


_DIGEST_SNIPPET = """
import hashlib, gymnasium, ragen_bench
h = hashlib.sha256()
for env_id in {ids!r}:
    env = gymnasium.make(env_id)
    for seed in (0, 7, 123, 10001):
        h.update(repr(env.reset(seed=seed)).encode())
        for action in {actions!r}:
            step = env.step(action)
            h.update(repr(step).encode())
            if step[2] or step[3]:
                break
    env.reset(seed=3)
    h.update(repr([env.reset() for _ in range(3)]).encode())  # unseeded resets continue the stream
print(h.hexdigest())
"""


def assert_same_in_fresh_processes(ids: Sequence[str], actions: Sequence[Any]) -> None:
    """Same ids, seeds and actions give byte-identical results under any PYTHONHASHSEED."""
    code = _DIGEST_SNIPPET.format(ids=list(ids), actions=list(actions))
    digests = {run_python(code, hash_seed=hash_seed).strip() for hash_seed in ("0", "1", "4242", "random")}
    assert len(digests) == 1


def assert_global_rngs_untouched(env_id: str, actions: Sequence[Any]) -> None:
    """Resets, steps and the optimal agent never read or write ``random``/``numpy.random``."""
    random.seed(99)
    np.random.seed(99)
    python_state, numpy_state = random.getstate(), np.random.get_state()
    env = gymnasium.make(env_id).unwrapped
    for seed in (0, 1, None):
        env.reset(seed=seed)
        env.optimal_action()
        for action in actions:
            step = env.step(action)
            if step[2] or step[3]:  # a finished episode cannot be stepped
                break
    assert random.getstate() == python_state
    after = np.random.get_state()
    assert after[0] == numpy_state[0] and np.array_equal(after[1], numpy_state[1]) and after[2:] == numpy_state[2:]
