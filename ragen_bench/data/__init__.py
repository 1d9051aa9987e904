"""Where the benchmark's frozen data and Hydra configs are read from.

In a checkout they sit at the top level, where a reader looks for them: ``data/`` (env
cards, seed panels, suites) and ``configs/`` (Hydra configs).  ``setup.py`` maps the two
folders into this package as ``ragen_bench.data.frozen`` and ``ragen_bench.data.configs``,
so a wheel carries them and an editable install reads the checkout's own files.  Code
reaches them only through :mod:`importlib.resources`, never through ``__file__``, so
both installs behave the same.
"""

from __future__ import annotations

import os
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

FROZEN_PACKAGE = "ragen_bench.data.frozen"
CONFIG_MODULE = "ragen_bench.data.configs"

# Tests point this at a copy of data/ to check that tampered files are caught.
DATA_DIR_OVERRIDE = "RAGEN_BENCH_DATA_DIR"


def data_root() -> Traversable:
    """The frozen-data folder (``data/`` of the checkout, or its copy inside the wheel)."""
    override = os.environ.get(DATA_DIR_OVERRIDE)
    return Path(override) if override else resources.files(FROZEN_PACKAGE)


def configs_root() -> Traversable:
    """The Hydra config folder (``configs/`` of the checkout, or its copy inside the wheel)."""
    return resources.files(CONFIG_MODULE)
