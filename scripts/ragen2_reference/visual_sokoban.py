"""Record RAGEN-2's ``VisualSimpleSokoban`` episodes (the pictures' Sokoban id).

``VisualSimpleSokoban`` is ``SimpleSokoban`` with ``render_mode: "rgb_array"``: its
observations are gym-sokoban's sprite pictures (16 pixels a cell) instead of the text
grid.  Those sprites are gym-sokoban's image files, which we do not copy: our
``RAGEN/Sokoban-6x6-Visual-v0`` draws its own picture of the same size.  What must be
exact is the episode, so for every seed of 0-99 and the test panel this records the
state as RAGEN-2's own text view sees it (``render('grid')``), the picture's shape and type, and a
fixed action sequence's states, rewards, done flags and info
(``tests/test_visual_sokoban.py`` replays them on our id; the fixture is
``tests/fixtures/ragen2/visual_sokoban.jsonl.gz``).

    PYTHONHASHSEED=0 /work/ragen2-venv/bin/python scripts/ragen2_reference/visual_sokoban.py /work/ragen2

Actions: even seeds play RAGEN-2's own shortest solution (its BFS), odd seeds 20 moves
drawn from ``random.Random(seed)``; an episode stops at ``done``.  PYTHONHASHSEED=0 fixes
RAGEN-2's fallback seed (``hash(str(seed))``, salted otherwise); no recorded seed needs it
(``tests/test_ragen2_v1_families.py`` counts SimpleSokoban's fallbacks).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer  # noqa: E402

TAG = "VisualSimpleSokoban"
RANDOM_MOVES = 20


def scalar(value):
    """numpy scalars as Python values."""
    return value.item() if hasattr(value, "item") else value


def frame_facts(picture) -> dict:
    return {"frame_shape": list(picture.shape), "frame_dtype": str(picture.dtype)}


def record(checkout: Path) -> list[dict]:
    from omegaconf import OmegaConf

    env_module = peer.import_module(checkout, "ragen.env.sokoban.env")
    config_module = peer.import_module(checkout, "ragen.env.sokoban.config")
    utils = peer.import_module(checkout, "ragen.env.sokoban.utils")
    config = OmegaConf.to_container(OmegaConf.load(checkout / "config" / "envs.yaml"))["custom_envs"][TAG]
    env = env_module.SokobanEnv(config_module.SokobanEnvConfig(**config["env_config"]))
    records = []
    for seed in peer.recorded_seeds():
        first = env.reset(seed=seed)
        episode = {"env": TAG, "seed": seed, "grid": env.render("grid"), **frame_facts(first), "steps": []}
        if seed % 2 == 0:
            actions = utils.get_shortest_action_path(env.room_fixed, env.room_state)
        else:
            draw = random.Random(seed)
            actions = [draw.choice(env.get_all_actions()) for _ in range(RANDOM_MOVES)]
        for action in actions:
            picture, reward, done, info = env.step(action)
            if frame_facts(picture) != frame_facts(first):  # recorded once per episode
                raise SystemExit(f"seed {seed}: the picture changed shape or type: {frame_facts(picture)}")
            episode["steps"].append({
                "action": env.ACTION_LOOKUP[action], "grid": env.render("grid"), "reward": scalar(reward),
                "done": bool(done), "info": {key: scalar(value) for key, value in info.items()},
            })
            if done:
                break
        records.append(episode)
    return records


def main(argv: list[str]) -> None:
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        raise SystemExit(__doc__)
    print(f"wrote {peer.write_jsonl('visual_sokoban', record(Path(argv[0])), compress=True)}")


if __name__ == "__main__":
    main(sys.argv[1:])
