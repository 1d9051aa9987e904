"""A peer's own env modules, imported from a checkout of its repository, for the benchmarks and
reference tests to run beside ours.

None of a peer's code is part of this repository.  The tests that need it skip unless an
environment variable names a checkout of the commit our envs were checked against:

    RAGEN_V1_CHECKOUT  a checkout of RAGEN-AI/RAGEN at 5eb79b82 (RAGEN v1: today's ids)
    RAGEN2_CHECKOUT    a checkout of mll-lab-nu/RAGEN at 20daedc (RAGEN-2)

Nothing is installed.  A RAGEN env's files import only Gymnasium, numpy and omegaconf (which
Hydra, a dependency of ours, brings), but ``ragen/__init__.py`` and ``ragen/env/__init__.py``
import veRL patches and every env (``gym_sokoban``, ``datasets``, ...).  So ``ragen`` and
``ragen.env`` are registered as empty packages whose search path is the checkout's folder, and
Python's import system loads the peer's own modules from there, in this process.  Each file a
module runs must be the one of the pinned commit (its git blob id), so a checkout of another
commit is refused, naming the file that differs.

Both RAGENs use the package name ``ragen``.  After a module is loaded its ``ragen.*`` entries
are taken out of ``sys.modules`` again (the loaded modules keep what they imported), so v1's
and RAGEN-2's envs can be loaded into the same run one after the other.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

# Registered without running their __init__.py (see above).
STAND_IN_PACKAGES = {"ragen": "ragen", "ragen.env": "ragen/env"}


class Unavailable(Exception):
    """Why a peer's code cannot be loaded; the message ends with how to get it."""


def git_blob_id(path: Path) -> str:
    """The id git gives the file's bytes (``git hash-object``)."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass(frozen=True)
class Checkout:
    """One pinned peer commit: where to find it and the blob ids of the files its modules run."""

    env_var: str
    repository: str
    commit: str
    folder: str  # the suggested clone folder in the how-to line

    @property
    def how_to(self) -> str:
        return (
            f"It is read from a checkout of {self.repository} at {self.commit[:8]}: git clone "
            f"https://github.com/{self.repository} {self.folder} && git -C {self.folder} checkout "
            f"{self.commit[:8]} && export {self.env_var}=$PWD/{self.folder}"
        )

    def root(self, blob_ids: dict[str, str]) -> Path:
        """The checkout's folder, once every file in ``blob_ids`` is that commit's."""
        value = os.environ.get(self.env_var)
        if not value:
            raise Unavailable(f"{self.env_var} is not set. {self.how_to}")
        root = Path(value).expanduser().resolve()
        for relative, blob_id in blob_ids.items():
            path = root / relative
            if not path.is_file():
                raise Unavailable(f"{self.env_var}={value} lacks {relative}. {self.how_to}")
            if git_blob_id(path) != blob_id:
                raise Unavailable(
                    f"{self.env_var}={value}: {relative} is not the file of {self.repository} "
                    f"{self.commit[:8]}. {self.how_to}"
                )
        return root


RAGEN_V1 = Checkout("RAGEN_V1_CHECKOUT", "RAGEN-AI/RAGEN", "5eb79b82cecc31db5662ba3c96b752405692410b", "ragen-v1")
RAGEN2 = Checkout("RAGEN2_CHECKOUT", "mll-lab-nu/RAGEN", "20daedc47558e000f7de912b060646bf2e8026bd", "ragen2")


def _register_packages(root: Path) -> None:
    for name, relative in STAND_IN_PACKAGES.items():
        package = types.ModuleType(name)
        package.__path__ = [str(root / relative)]
        package.__package__ = name
        sys.modules[name] = package
    sys.modules["ragen"].env = sys.modules["ragen.env"]


def _ragen_modules() -> set[str]:
    return {name for name in sys.modules if name == "ragen" or name.startswith("ragen.")}


@functools.lru_cache(maxsize=None)
def _load(checkout: Checkout, module: str, blob_items: tuple[tuple[str, str], ...]) -> types.ModuleType | Unavailable:
    try:
        root = checkout.root(dict(blob_items))
    except Unavailable as reason:
        return reason
    if _ragen_modules():
        return Unavailable(f"a 'ragen' package is already imported in this process; {module} cannot load beside it")
    try:
        _register_packages(root)
        return importlib.import_module(module)
    except ImportError as error:
        return Unavailable(f"{module} does not import from {root}: {error!r}. {checkout.how_to}")
    finally:
        for name in _ragen_modules():  # the next load (the other RAGEN) starts clean
            del sys.modules[name]


def load(checkout: Checkout, module: str, blob_ids: dict[str, str]) -> types.ModuleType:
    """``module`` (``ragen.env.sudoku.env``) from ``checkout``; skips the calling test when the
    checkout is missing, incomplete or of another commit.  ``blob_ids`` lists every file of the
    checkout that importing ``module`` runs, with its git blob id at the pinned commit."""
    loaded = _load(checkout, module, tuple(sorted(blob_ids.items())))
    if isinstance(loaded, Unavailable):
        pytest.skip(str(loaded))
    return loaded
