"""RAGEN v1's own FrozenLake, from a checkout named by ``RAGEN_V1_CHECKOUT`` (see
``peer_checkout.py``), for the benchmarks to time beside ours.  Without it they skip and say
how to get one."""

from __future__ import annotations

from typing import Any

from tests.benchmarks.peer_checkout import RAGEN_V1, load

# The git blob ids at RAGEN v1's commit of every file its FrozenLake imports (`git ls-tree -r COMMIT`).
BLOB_IDS = {
    "ragen/utils.py": "50b6d0e26440aee66ef0812b639d900a60f26a2b",
    "ragen/env/base.py": "e29f1a00f1dec9d73893283e8421db4abd6bf878",
    "ragen/env/frozen_lake/__init__.py": "f6acdf3bb5aea6fbf166025539cd032e90137ee4",
    "ragen/env/frozen_lake/config.py": "7a3553951a98b0b207838fb61526c203b32b76e2",
    "ragen/env/frozen_lake/env.py": "bba95c23fdbeafd6cf2c237f31e5b437bfb6a26f",
    "ragen/env/frozen_lake/utils.py": "87115d547a77321e70c0280e19de22ded76d2cec",
}


def frozen_lake_env(**config: Any) -> Any:
    """A new ``ragen.env.frozen_lake.FrozenLakeEnv(FrozenLakeEnvConfig(**config))`` from the checkout."""
    module = load(RAGEN_V1, "ragen.env.frozen_lake", BLOB_IDS)
    return module.FrozenLakeEnv(module.FrozenLakeEnvConfig(**config))
