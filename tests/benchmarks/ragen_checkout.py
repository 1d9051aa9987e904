"""RAGEN v1's own FrozenLake, imported from a checkout of RAGEN-AI/RAGEN for the benchmarks to time beside ours.

None of RAGEN's code is part of this repository.  The benchmarks that need it skip unless
``RAGEN_V1_CHECKOUT`` names a checkout of the commit the envs reproduce::

    git clone https://github.com/RAGEN-AI/RAGEN ragen-v1
    git -C ragen-v1 checkout 5eb79b82
    export RAGEN_V1_CHECKOUT=$PWD/ragen-v1

Nothing is installed.  The files RAGEN's FrozenLake runs, ``ragen/env/frozen_lake/``,
``ragen/env/base.py`` and ``ragen/utils.py``, import only Gymnasium, numpy and omegaconf
(which Hydra, a dependency of ours, brings), but ``ragen/env/__init__.py`` imports every
RAGEN env (``gym_sokoban``, ``datasets``, ...).  So ``ragen`` and ``ragen.env`` are
registered as empty packages whose search path is the checkout's folder, and Python's import
system then loads RAGEN's own modules from there, in this process: both envs are timed in
the same run.  Each of those files must be the one of that commit (its git blob id), so a
checkout of another commit is refused with the file it differs in.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

ENV_VAR = "RAGEN_V1_CHECKOUT"
COMMIT = "5eb79b82cecc31db5662ba3c96b752405692410b"
HOW_TO = (
    f"RAGEN's own FrozenLake is timed from a checkout of RAGEN-AI/RAGEN at {COMMIT[:8]}: "
    f"git clone https://github.com/RAGEN-AI/RAGEN ragen-v1 && git -C ragen-v1 checkout {COMMIT[:8]} "
    f"&& export {ENV_VAR}=$PWD/ragen-v1"
)
# The git blob ids at COMMIT of every file RAGEN's FrozenLake imports (`git ls-tree -r COMMIT`).
BLOB_IDS = {
    "ragen/utils.py": "50b6d0e26440aee66ef0812b639d900a60f26a2b",
    "ragen/env/base.py": "e29f1a00f1dec9d73893283e8421db4abd6bf878",
    "ragen/env/frozen_lake/__init__.py": "f6acdf3bb5aea6fbf166025539cd032e90137ee4",
    "ragen/env/frozen_lake/config.py": "7a3553951a98b0b207838fb61526c203b32b76e2",
    "ragen/env/frozen_lake/env.py": "bba95c23fdbeafd6cf2c237f31e5b437bfb6a26f",
    "ragen/env/frozen_lake/utils.py": "87115d547a77321e70c0280e19de22ded76d2cec",
}
# Registered without running their __init__.py (ragen's is empty, ragen.env's imports every env).
STAND_IN_PACKAGES = {"ragen": "ragen", "ragen.env": "ragen/env"}


class Unavailable(Exception):
    """Why RAGEN's code cannot be loaded; the message ends with how to get it."""


def _git_blob_id(path: Path) -> str:
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _checkout() -> Path:
    value = os.environ.get(ENV_VAR)
    if not value:
        raise Unavailable(f"{ENV_VAR} is not set. {HOW_TO}")
    root = Path(value).expanduser().resolve()
    for relative, blob_id in BLOB_IDS.items():
        path = root / relative
        if not path.is_file():
            raise Unavailable(f"{ENV_VAR}={value} lacks {relative}. {HOW_TO}")
        if _git_blob_id(path) != blob_id:
            raise Unavailable(f"{ENV_VAR}={value}: {relative} is not the file of RAGEN {COMMIT[:8]}. {HOW_TO}")
    return root


def _register_packages(root: Path) -> None:
    for name, relative in STAND_IN_PACKAGES.items():
        folder = str(root / relative)
        existing = sys.modules.get(name)
        if existing is not None:
            if list(getattr(existing, "__path__", ())) != [folder]:
                raise Unavailable(f"another {name!r} is already imported ({existing!r}). {HOW_TO}")
            continue
        package = types.ModuleType(name)
        package.__path__ = [folder]
        package.__package__ = name
        sys.modules[name] = package
    sys.modules["ragen"].env = sys.modules["ragen.env"]


@functools.lru_cache(maxsize=1)
def _frozen_lake() -> types.ModuleType | Unavailable:
    try:
        root = _checkout()
        before = set(sys.modules)
        _register_packages(root)
        try:
            return importlib.import_module("ragen.env.frozen_lake")
        except ImportError as error:
            for name in set(sys.modules) - before:  # leave no half-imported RAGEN behind
                del sys.modules[name]
            raise Unavailable(f"RAGEN's FrozenLake does not import from {root}: {error!r}. {HOW_TO}") from error
    except Unavailable as reason:
        return reason


def frozen_lake_env(**config: Any) -> Any:
    """A new ``ragen.env.frozen_lake.FrozenLakeEnv(FrozenLakeEnvConfig(**config))`` from the checkout.

    Skips the calling test when the checkout is missing, incomplete or of another commit.
    """
    module = _frozen_lake()
    if isinstance(module, Unavailable):
        pytest.skip(str(module))
    return module.FrozenLakeEnv(module.FrozenLakeEnvConfig(**config))
