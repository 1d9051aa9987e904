"""The shared env contract (``tests/env_contract.py``), run once on every registered id.

* ``test_contract``: a user's ``check_env(gymnasium.make(id).unwrapped)``, with the checker's
  default arguments, passes for every id and silently (warnings are errors), and the attributes
  the chat layer reads hold; one env per id, so the checker runs once per id.
* ``test_same_episodes_in_fresh_processes``: four fresh interpreters (one per PYTHONHASHSEED)
  each play every id of the families in ``DIGEST_ACTIONS``, and their per-id digests agree.

Ids from an extra (``rg``: reasoning-gym, ``twx``: TextWorld-Express and a JVM) skip, saying
what to install, when it is missing outside CI; in CI (``CI=true``) that is a failure, except for an
extra that lives in a virtualenv of its own (``catalog.OWN_VENV_EXTRAS``), whose ids are tested there.
"""

from __future__ import annotations

import gymnasium
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench.registry import BUILTIN_IDS, ENTRIES, entry
from tests import env_contract

# Each family's actions for the digest: valid ones, a few invalid or malformed replies among them.
DIGEST_ACTIONS: dict[str, list] = {
    "bandit": [1],
    "countdown": ["(1 + 2) * 3"],
    "frozen_lake": [3, 2, 1, 0, 1, 2] * 3,  # Up, Right, Down, Left, Down, Right
    "game_2048": [0, 1, 2, 3, 3, 2, 1, 0],
    "math_qa": ["12", "7", "3", "99", "0"],
    "rubikscube": [0, 5, 7, 11, 2, 9] * 4,
    "sudoku": ["2,3,5", "place 1 at row 1 col 1", "nonsense", "(1,1,1)"],
}
# Families whose determinism check across processes is their own, and why.
OWN_DIGEST = {
    "sokoban": "tests/test_sokoban.py: seeds that reach the generator's fallback chain",
    "textworld_express": "tests/test_textworld_express.py: the library's JVM, gold paths, train and test folds",
    "reasoning_gym": "tests/test_reasoning_gym.py: the library's generators under two hash seeds",
}


@pytest.mark.parametrize("env_id", [row.id for row in ENTRIES])
def test_contract(env_id):
    env_contract.require_extra(env_id)
    env_contract.assert_contract(env_id)


def test_every_builtin_family_is_digested_here_or_in_its_own_file():
    families = {entry(env_id).family for env_id in BUILTIN_IDS}
    assert families <= set(DIGEST_ACTIONS) | set(OWN_DIGEST), families - set(DIGEST_ACTIONS) - set(OWN_DIGEST)
    assert set(DIGEST_ACTIONS) <= families and not set(DIGEST_ACTIONS) & set(OWN_DIGEST)


def test_same_episodes_in_fresh_processes():
    plan = {env_id: DIGEST_ACTIONS[entry(env_id).family] for env_id in BUILTIN_IDS
            if entry(env_id).family in DIGEST_ACTIONS}
    env_contract.assert_same_in_fresh_processes(plan)


def test_the_reference_claim_cannot_lie():
    """``has_reference_agent`` is checked against the env, both ways: a claim with no move fails, a
    disclaimer with a move fails (so no id can say it has, or has not, a reference agent untruly)."""
    env = gymnasium.make(next(row.id for row in ENTRIES if row.family == "bandit")).unwrapped
    env.reset(seed=1)
    env_contract.assert_reference_claim(env)
    env.has_reference_agent = False  # disclaims, yet names a move
    with pytest.raises(AssertionError, match="no reference agent, yet names"):
        env_contract.assert_reference_claim(env)
    env.has_reference_agent, env.optimal_action = True, lambda steps_left=None: None  # claims, names none
    with pytest.raises(AssertionError, match="claims a reference agent, yet names None"):
        env_contract.assert_reference_claim(env)

