"""Record RAGEN-2's episodes of the families it shares with RAGEN v1: Sokoban, FrozenLake, Bandit.

For every tag of RAGEN-2's ``config/envs.yaml`` of those families (its own ``env_config``,
read from the checkout; CoordFrozenLake also as ``config/_3_frozen_lake.yaml`` overrides it) and every seed of 0-99 and the test panel, one record: the reset
observation and a fixed action sequence's observations, rewards, done flags and info.  Our
tests replay the same actions on our ids and compare (``tests/test_ragen2_v1_families.py``).
Writes ``tests/fixtures/ragen2/{sokoban,frozen_lake,bandit}.jsonl.gz`` (byte-reproducible).

    PYTHONHASHSEED=0 /work/ragen2-venv/bin/python scripts/ragen2_reference/v1_families.py /work/ragen2

Action sequences: Sokoban's even seeds play RAGEN-2's own shortest solution (its BFS, 6x6
rooms only), odd seeds 20 moves drawn from ``random.Random(seed)``; FrozenLake plays 20
drawn moves; Bandit pulls each arm once (two episodes per seed) and keeps the arms'
names, order, rewards and info, not RAGEN-2's prompt wording.  An episode stops at
``done``.  Sokoban records whether RAGEN-2 fell back to another seed (its fallback seed
is ``hash(str(seed))``, salted unless PYTHONHASHSEED is fixed).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer  # noqa: E402

SOKOBAN_TAGS = ("SimpleSokoban", "LargerSokoban", "SokobanDifferentGridVocab", "CoordSokoban")
FROZEN_LAKE_TAGS = ("FrozenLake", "CoordFrozenLake")
# RAGEN-2's FrozenLake experiment (config/_3_frozen_lake.yaml) overrides CoordFrozenLake's
# env_config (success_rate 1: no slipping); recorded as this tag.
FROZEN_LAKE_EXPERIMENT = ("CoordFrozenLake@_3_frozen_lake", "_3_frozen_lake.yaml", "CoordFrozenLake")
BANDIT_TAGS = ("Bandit", "BanditTest")
RANDOM_MOVES = 20


def env_configs(checkout: Path, experiment: str | None = None) -> dict:
    """``custom_envs`` of ``config/envs.yaml``, with an experiment file's overrides merged in."""
    from omegaconf import OmegaConf

    config = OmegaConf.load(checkout / "config" / "envs.yaml")
    if experiment:
        config = OmegaConf.merge(config, {"custom_envs": OmegaConf.load(checkout / "config" / experiment)["custom_envs"]})
    return OmegaConf.to_container(config)["custom_envs"]


def plain(value):
    """JSON-ready: numpy scalars and bools as Python values."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return value.item() if hasattr(value, "item") else value


def play(env, seed: int, actions: list[int], tag: str, extra: dict | None = None) -> dict:
    record = {"env": tag, "seed": seed, "obs": env.reset(seed=seed), "steps": [], **(extra or {})}
    for action in actions:
        obs, reward, done, info = env.step(action)
        record["steps"].append(
            {"action": env.ACTION_LOOKUP[action], "obs": obs, "reward": plain(reward), "done": bool(done), "info": plain(info)}
        )
        if done:
            break
    return record


def random_moves(seed: int, action_ids: list[int]) -> list[int]:
    draw = random.Random(seed)
    return [draw.choice(action_ids) for _ in range(RANDOM_MOVES)]


def sokoban(checkout: Path) -> list[dict]:
    env_module = peer.import_module(checkout, "ragen.env.sokoban.env")
    config_module = peer.import_module(checkout, "ragen.env.sokoban.config")
    utils = peer.import_module(checkout, "ragen.env.sokoban.utils")
    generate_room = env_module.generate_room
    calls = [0]

    def counting_generate_room(*args, **kwargs):  # a second call means RAGEN-2 fell back
        calls[0] += 1
        return generate_room(*args, **kwargs)

    env_module.generate_room = counting_generate_room
    configs = env_configs(checkout)
    records = []
    for tag in SOKOBAN_TAGS:
        env = env_module.SokobanEnv(config_module.SokobanEnvConfig(**configs[tag]["env_config"]))
        for seed in peer.recorded_seeds():
            calls[0] = 0
            env.reset(seed=seed)
            fallback = calls[0] > 1
            if seed % 2 == 0 and env.dim_room == (6, 6):
                actions = utils.get_shortest_action_path(env.room_fixed, env.room_state)
            else:
                actions = random_moves(seed, env.get_all_actions())
            records.append(play(env, seed, actions, tag, {"fallback": fallback}))
    return records


def frozen_lake(checkout: Path) -> list[dict]:
    env_module = peer.import_module(checkout, "ragen.env.frozen_lake.env")
    config_module = peer.import_module(checkout, "ragen.env.frozen_lake.config")
    label, experiment, base_tag = FROZEN_LAKE_EXPERIMENT
    configs = env_configs(checkout)
    runs = [(tag, configs[tag]["env_config"]) for tag in FROZEN_LAKE_TAGS]
    runs.append((label, env_configs(checkout, experiment)[base_tag]["env_config"]))
    records = []
    for tag, env_config in runs:
        env = env_module.FrozenLakeEnv(config_module.FrozenLakeEnvConfig(**env_config))
        for seed in peer.recorded_seeds():
            records.append(play(env, seed, random_moves(seed, env.get_all_actions()), tag))
    return records


def bandit(checkout: Path) -> list[dict]:
    env_module = peer.import_module(checkout, "ragen.env.bandit.env")
    config_module = peer.import_module(checkout, "ragen.env.bandit.config")
    configs = env_configs(checkout)
    records = []
    for tag in BANDIT_TAGS:
        # RAGEN-2 adds the env's creation index in the process to every seed; the first env
        # created (index 0) plays the seed as given, which is what we record.
        env_module.BanditEnv.class_counter = 0
        env = env_module.BanditEnv(config_module.BanditEnvConfig(**configs[tag]["env_config"]))
        assert env.internal_seed == 0
        for seed in peer.recorded_seeds():
            for action in env.get_all_actions():
                extra = {"pulled": int(action)}
                record = play(env, seed, [action], tag, extra)
                record.update(low_risk=env.lo_arm_name, high_risk=env.hi_arm_name)
                record["arms"] = [env.ACTION_LOOKUP[a] for a in env.get_all_actions()]
                # RAGEN-2's prompt prose is its text, not data: only the facts are kept.
                del record["obs"], record["steps"][0]["obs"]
                records.append(record)
    return records


FAMILIES = {"sokoban": sokoban, "frozen_lake": frozen_lake, "bandit": bandit}


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        raise SystemExit(__doc__)
    checkout = Path(argv[0])
    for name in argv[1:] or FAMILIES:
        path = peer.write_jsonl(name, FAMILIES[name](checkout), compress=True)
        print(f"wrote {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
