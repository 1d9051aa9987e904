"""RAGEN-2's own 2048 env, from a checkout named by ``RAGEN2_CHECKOUT`` (see ``peer_checkout.py``),
for the benchmarks to run beside ours.  Without it they skip and say how to get one."""

from __future__ import annotations

from typing import Any

from tests.benchmarks.peer_checkout import RAGEN2, load

# The git blob ids at RAGEN-2's commit of every file its 2048 env imports (`git ls-tree -r 20daedc`).
BLOB_IDS = {
    "ragen/env/base.py": "e29f1a00f1dec9d73893283e8421db4abd6bf878",
    "ragen/env/game_2048/__init__.py": "62f6f2a3f627a0efd1c352df0e7adf18c4e86fbc",
    "ragen/env/game_2048/config.py": "45106d71328eabf47febac2f68669e239e8b0885",
    "ragen/env/game_2048/env.py": "155f49e940af314db018bbf09e932a78f29975b6",
    "ragen/utils.py": "50b6d0e26440aee66ef0812b639d900a60f26a2b",
}

# Our id -> RAGEN-2's Game2048EnvConfig arguments (config/envs.yaml's game_2048 has none).
CONFIGS: dict[str, dict[str, Any]] = {
    "RAGEN/2048-v0": {},
    "RAGEN/2048-RawReward-v0": dict(use_log_reward=False),
}


def game_2048_env(env_id: str) -> Any:
    """A new ``ragen.env.game_2048.Game2048Env`` configured as our ``env_id``, from the checkout."""
    module = load(RAGEN2, "ragen.env.game_2048", BLOB_IDS)
    return module.Game2048Env(module.Game2048EnvConfig(**CONFIGS[env_id]))
