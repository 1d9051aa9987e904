"""Shared helpers of the veRL-side tests (run in .venv-verl by scripts/setup_verl_venv.sh).

This folder is the package ``tests_verl``, never ``tests``: veRL's wheel installs a top-level
``tests`` package, and the repository's ``tests`` package is for the main virtualenv.  Nothing
here imports either of them.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest


def train_config(preset: str = "starpo-s", overrides: Sequence[str] = ()):
    """The checked ``TrainConfig`` of ``configs/train/<preset>.yaml`` with ``overrides``, as the CLI hands it to
    the integration."""
    from ragen_bench.train.config import from_preset

    return from_preset(preset, overrides)


@pytest.fixture(scope="session")
def tiny_dir():
    from ragen_bench.agents.sampling import resolve_model_path

    return resolve_model_path("tiny")
