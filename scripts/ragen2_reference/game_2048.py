"""Record RAGEN-2's 2048 episodes (``game_2048`` of its ``config/envs.yaml``, default config).

For every seed of 0-99 and of the test panel, one record: the reset observation and info,
then a fixed action sequence's observations, rewards, done flags and info.  The actions are
drawn uniformly from 0..3 by ``random.Random(seed)`` (so invalid moves occur); seeds 0-99
play until the game is over, the test panel's seeds their first ``PANEL_STEPS`` moves.
``tests/test_game_2048.py`` replays the same actions on ``RAGEN/2048-v0`` and compares.

    /work/ragen2-venv/bin/python scripts/ragen2_reference/game_2048.py /work/ragen2

Step records keep the observation text whole for the first ``FULL_TEXT_STEPS`` steps,
then only the first 16 hex digits of its SHA-256 (the grid, score and valid actions it
shows are in the info anyway).  The file is written gzipped (``game_2048.jsonl.gz``,
byte-reproducible), as 25,000 steps of JSON are 9 MB plain.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer  # noqa: E402

PANEL_STEPS = 40
FULL_TEXT_STEPS = 10
MAX_STEPS = 2000  # random play ends far sooner (a few hundred moves)


def play(env, seed: int, steps: int) -> dict:
    obs, info = env.reset(seed=seed)
    draw = random.Random(seed)
    return {
        "env": "game_2048",
        "seed": seed,
        "obs": obs,
        "info": peer.plain(info),
        "steps": peer.step_records(env, lambda: draw.randrange(4), steps, FULL_TEXT_STEPS),
    }


def main(checkout: str) -> None:
    env_module = peer.import_module(checkout, "ragen.env.game_2048.env")
    env = env_module.Game2048Env()  # envs.yaml's game_2048 has env_config: null
    records = [play(env, seed, MAX_STEPS if seed < 100 else PANEL_STEPS) for seed in peer.recorded_seeds()]
    path = peer.write_jsonl("game_2048", records, compress=True)
    print(f"{path}: {len(records)} episodes, {sum(len(r['steps']) for r in records)} steps")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
