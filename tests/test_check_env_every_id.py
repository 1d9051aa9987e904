"""Gymnasium's own checker passes on every registered id with its default arguments.

(The family tests also run it silently, warnings as errors, on their own ids; this one is the
promise that a user's ``check_env(gymnasium.make(id).unwrapped)`` passes for every id.)
"""

from __future__ import annotations

import warnings

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench.registry import ENTRIES


@pytest.mark.parametrize("row", ENTRIES, ids=lambda row: row.id)
def test_check_env_passes_with_the_defaults(row):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the checker's warnings are the family tests' business
        env = gymnasium.make(row.id)
    check_env(env.unwrapped)
    env.close()
