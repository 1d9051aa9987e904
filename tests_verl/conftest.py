"""Shared helpers of the veRL-side tests (run in .venv-verl by scripts/setup_verl_venv.sh).

This folder is the package ``tests_verl``, never ``tests``: veRL's wheel installs a top-level
``tests`` package, and the repository's ``tests`` package is for the main virtualenv.  Nothing
here imports either of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest


def train_config(preset: str = "starpo-s", overrides: Sequence[str] = ()) -> dict[str, Any]:
    """A composed ``configs/train/<preset>.yaml``, as the CLI hands it to the integration."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from ragen_bench.data import CONFIG_MODULE

    with initialize_config_module(CONFIG_MODULE, version_base=None):
        return OmegaConf.to_container(compose(config_name=f"train/{preset}", overrides=list(overrides)), resolve=True)


@pytest.fixture(scope="session")
def tiny_dir():
    from ragen_bench.agents.sampling import resolve_model_path

    return resolve_model_path("tiny")
