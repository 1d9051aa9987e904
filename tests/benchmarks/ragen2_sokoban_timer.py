"""Time RAGEN-2's own Sokoban env; run by ``ragen2_v1_families.time_sokoban`` in RAGEN-2's Python.

Reads one JSON job on stdin: ``checkout`` (a RAGEN-2 checkout), ``config`` (its SokobanEnvConfig
arguments), ``what`` (``"reset"``: reset ``rounds`` fresh seeds from ``first_seed``; ``"step"``:
step ``rounds`` times cycling ``actions`` from seed ``seed``'s level, restarting it when solved),
``warmup``.  Prints one JSON line: the per-call seconds (``timings``) and what the calls returned
(``observations``, and for steps ``rewards`` and ``dones``), for the benchmark to check.
The clock is ``time.perf_counter`` around each call, as pytest-benchmark's pedantic mode times one.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

# The recording scripts' loader of RAGEN-2's modules (stand-in ragen packages).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "ragen2_reference"))
import peer  # noqa: E402


def main() -> None:
    job = json.loads(sys.stdin.read())
    env_module = peer.import_module(job["checkout"], "ragen.env.sokoban.env")
    config = peer.import_module(job["checkout"], "ragen.env.sokoban.config").SokobanEnvConfig(**job["config"])
    env = env_module.SokobanEnv(config)
    clock = time.perf_counter
    timings, observations, rewards, dones = [], [], [], []
    if job["what"] == "reset":
        for index in range(job["warmup"] + job["rounds"]):
            seed = job["first_seed"] + index
            start = clock()
            observation = env.reset(seed=seed)
            elapsed = clock() - start
            if index >= job["warmup"]:
                timings.append(elapsed)
                observations.append(observation)
    else:
        env.reset(seed=job["seed"])
        actions = job["actions"]
        for index in range(job["warmup"] + job["rounds"]):
            action = actions[index % len(actions)]
            start = clock()
            observation, reward, done, _ = env.step(action)
            elapsed = clock() - start
            if index >= job["warmup"]:
                timings.append(elapsed)
                observations.append(observation)
                rewards.append(reward)
                dones.append(bool(done))
            if done:
                env.reset(seed=job["seed"])
    print(json.dumps({"timings": timings, "observations": observations, "rewards": rewards, "dones": dones}))


if __name__ == "__main__":
    main()
