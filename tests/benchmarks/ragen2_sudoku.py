"""RAGEN-2's own Sudoku env, from a checkout named by ``RAGEN2_CHECKOUT`` (see ``peer_checkout.py``),
for the tests and benchmarks to run beside ours.  Without it they skip and say how to get one."""

from __future__ import annotations

from typing import Any

from tests.benchmarks.peer_checkout import RAGEN2, load

# The git blob ids at RAGEN-2's commit of every file its Sudoku env imports (`git ls-tree -r 20daedc`).
BLOB_IDS = {
    "ragen/env/base.py": "e29f1a00f1dec9d73893283e8421db4abd6bf878",
    "ragen/env/sudoku/__init__.py": "866152e53579d530d1e89d895450ce845f997e3f",
    "ragen/env/sudoku/config.py": "2e7c32208942dd201d87d14b2c650ff3fcc96ae8",
    "ragen/env/sudoku/env.py": "3e789375e968261c262b23924170d14d24b6e3db",
    "ragen/env/sudoku/utils.py": "12d3e70a5a5af8b87428080ce3ba21681dd43c99",
}

# Our id -> RAGEN-2's SudokuEnvConfig arguments (config/envs.yaml's env_config; the 4x4 is ours).
CONFIGS: dict[str, dict[str, Any]] = {
    "RAGEN/Sudoku-9x9-Easy-v0": dict(grid_size=9, difficulty="easy", max_steps=81),
    "RAGEN/Sudoku-9x9-Medium-v0": dict(grid_size=9, difficulty="medium", max_steps=81),
    "RAGEN/Sudoku-4x4-v0": dict(grid_size=4, difficulty="easy", max_steps=16),
}
_FEEDBACK = dict(render_format="with_feedback", show_conflicts=True, show_valid_numbers=True)


def sudoku_env(env_id: str) -> Any:
    """A new ``ragen.env.sudoku.SudokuEnv`` configured as our ``env_id``, from the checkout."""
    module = load(RAGEN2, "ragen.env.sudoku", BLOB_IDS)
    return module.SudokuEnv(module.SudokuEnvConfig(**CONFIGS[env_id], **_FEEDBACK))
