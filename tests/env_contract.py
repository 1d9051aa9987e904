"""Checks every text env must pass, written once.

``tests/test_env_contract_every_id.py`` runs ``assert_contract`` (the Gymnasium checker and
the chat-facing attributes) on every registered id, and the cross-process digest over the families listed
there; ``tests/test_env_contract_base.py`` and the family files call
``assert_global_rngs_untouched`` with their own actions.
"""

from __future__ import annotations

import json
import random
import shutil
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.envs.registration import load_env_creator
from gymnasium.utils.env_checker import check_env

from ragen_bench import catalog
from ragen_bench.envs.textworld_express import backend as twx_backend
from ragen_bench.registry import entry
from tests.conftest import in_ci, run_python


def env_class(env_id: str) -> type:
    """The class ``gymnasium.make(env_id)`` builds, imported without making one (no extra's library needed):
    the declared properties tests select ids by (``has_reference_agent``, ``metadata["render_modes"]``)."""
    return load_env_creator(gymnasium.spec(env_id).entry_point)


def missing(env_id: str) -> str | None:
    """What an id needs that this machine lacks (an extra's library, the JVM), else ``None``."""
    hint = catalog.missing_extra(env_id)
    if hint is None and entry(env_id).extra == "twx" and shutil.which("java") is None:
        hint = twx_backend.JVM_HINT
    return hint


def require_extra(env_id: str) -> None:
    """Skip, saying what to install, when the id's extra is missing; in CI a failure, except for an extra
    that lives in a virtualenv of its own (``catalog.OWN_VENV_EXTRAS``), whose ids are tested there."""
    hint = missing(env_id)
    if hint:
        if in_ci() and entry(env_id).extra not in catalog.OWN_VENV_EXTRAS:
            pytest.fail(f"{hint}; CI=true, so this is a failure, not a skip")
        pytest.skip(hint)


def assert_contract(env_id: str) -> None:
    """``check_env(gymnasium.make(env_id).unwrapped)`` with the checker's default arguments (what
    a user runs, render checks included) passes silently: every warning is an error, from
    ``make`` to ``close``.  The chat-facing attributes are then checked on the same env, so the
    checker runs once per id."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gymnasium.make(env_id)
        try:
            check_env(env.unwrapped)
            assert_chat_attributes(env)
        finally:
            env.close()


def assert_chat_attributes(env: gymnasium.Env) -> None:
    """What the chat layer reads: names, symbols, instruction, the optimal action."""
    obs, info = env.reset(seed=1)
    env = env.unwrapped
    assert env.observation_space.contains(obs) and env.render_text() == obs  # what ansi mode renders
    assert info["success"] is False and "optimal_length" in info
    assert isinstance(env.instruction, str) and len(env.instruction) > 40
    assert all(symbol in env.observation_space.character_set for symbol in env.symbol_meanings)
    if env.action_names is None:
        assert isinstance(env.action_space, gymnasium.spaces.Text)
    else:
        assert len(env.action_names) == env.action_space.n
    assert_reference_claim(env)


def assert_reference_claim(env: gymnasium.Env) -> None:
    """At the start of an episode the env's ``has_reference_agent`` is true to its ``optimal_action()``:
    a claimed reference agent names a move of the action space, a disclaimed one names none; and
    ``baseline_action()`` follows the reference agent wherever there is one."""
    move = env.optimal_action()
    if not env.has_reference_agent:
        assert move is None, f"{type(env).__name__} says it has no reference agent, yet names {move!r}"
    elif env.action_names is None:
        assert isinstance(move, str), f"{type(env).__name__} claims a reference agent, yet names {move!r}"
    else:
        assert move in range(env.action_space.n), f"{type(env).__name__} claims a reference agent, yet names {move!r}"
    # The scripted baseline is the reference agent where there is one; elsewhere a family's own policy, or none.
    baseline = env.baseline_action()
    if env.has_reference_agent:
        assert baseline == move, f"{type(env).__name__}: its baseline {baseline!r} is not its optimal move {move!r}"
    else:
        assert baseline is None or baseline in range(env.action_space.n), f"{type(env).__name__}: baseline {baseline!r}"


_DIGEST_SNIPPET = """
import hashlib, json, gymnasium, ragen_bench
digests = {{}}
for env_id, actions in {plan!r}:
    h = hashlib.sha256()
    env = gymnasium.make(env_id)
    for seed in (0, 7, 123, 10001):
        h.update(repr(env.reset(seed=seed)).encode())
        for action in actions:
            step = env.step(action)
            h.update(repr(step).encode())
            if step[2] or step[3]:
                break
    env.reset(seed=3)
    h.update(repr([env.reset() for _ in range(3)]).encode())  # unseeded resets continue the stream
    env.close()
    digests[env_id] = h.hexdigest()
print(json.dumps(digests))
"""


def assert_same_in_fresh_processes(actions_by_id: Mapping[str, Sequence[Any]]) -> None:
    """Each id, played on the same seeds with its actions, gives byte-identical resets and steps
    under any PYTHONHASHSEED: one fresh process per hash seed plays every id, and the ids whose
    digests differ are named."""
    code = _DIGEST_SNIPPET.format(plan=[(env_id, list(actions)) for env_id, actions in actions_by_id.items()])
    runs = {seed: json.loads(run_python(code, hash_seed=seed)) for seed in ("0", "1", "4242", "random")}
    for digests in runs.values():
        assert list(digests) == list(actions_by_id)
    differing = sorted(env_id for env_id in actions_by_id if len({run[env_id] for run in runs.values()}) > 1)
    assert not differing, f"different episodes under different PYTHONHASHSEEDs: {differing}"


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
