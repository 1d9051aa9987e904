"""RAGEN-2's own 2x2 Rubik's cube env, from a checkout named by ``RAGEN2_CHECKOUT`` (see
``peer_checkout.py``), for the benchmarks to time beside ours.  Without it they skip and say how
to get one."""

from __future__ import annotations

from typing import Any

from ragen_bench.registry import entry
from tests.benchmarks.peer_checkout import RAGEN2, load

# The git blob ids at RAGEN-2's commit of every file its cube env imports (`git ls-tree -r 20daedc`).
BLOB_IDS = {
    "ragen/utils.py": "50b6d0e26440aee66ef0812b639d900a60f26a2b",
    "ragen/env/base.py": "e29f1a00f1dec9d73893283e8421db4abd6bf878",
    "ragen/env/rubikscube/__init__.py": "d87cf8fbff31614917724f7de80dda10df0ce782",
    "ragen/env/rubikscube/config.py": "a14a73bad630447047742134b1361f6078a345e2",
    "ragen/env/rubikscube/env.py": "4d239dae319f42e9b8ac3e50b6ba4752edf67b3e",
}


def rubikscube_env(env_id: str) -> Any:
    """A new ``ragen.env.rubikscube.RubiksCube2x2Env`` configured as our ``env_id`` (same depth and step cap)."""
    module = load(RAGEN2, "ragen.env.rubikscube", BLOB_IDS)
    return module.RubiksCube2x2Env(module.RubiksCube2x2Config(**entry(env_id).kwargs))
