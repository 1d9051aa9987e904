"""Import RAGEN-2's env modules from a checkout, for the recording scripts beside this file.

Run the recording scripts with a Python that has RAGEN-2's own dependencies (gymnasium, gym,
gym_sokoban, numpy, omegaconf), never with the project's venv: what they record is RAGEN-2's
behaviour, and nothing of RAGEN-2 is part of this repository.

``ragen/__init__.py`` and ``ragen/env/__init__.py`` import veRL patches and every env
(datasets, Lean, ...), so ``ragen`` and ``ragen.env`` are registered as empty packages whose
search path is the checkout's folder; Python then imports the requested modules (and what
they import, e.g. ``ragen.utils``) from the checkout itself.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib
import json
import sys
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

COMMIT = "20daedc47558e000f7de912b060646bf2e8026bd"  # mll-lab-nu/RAGEN, the RAGEN-2 we reproduce
TEST_SEEDS = range(123, 379)  # ragen_bench.panels' test split
FIXTURE_DIR = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "ragen2"


def import_module(checkout: str | Path, module: str) -> types.ModuleType:
    """``module`` (``"ragen.env.sokoban.env"``) from the RAGEN-2 checkout at ``checkout``."""
    root = Path(checkout).resolve()
    if not (root / "ragen" / "env").is_dir():
        raise SystemExit(f"{root} is not a checkout of mll-lab-nu/RAGEN (no ragen/env/)")
    for name, relative in (("ragen", "ragen"), ("ragen.env", "ragen/env")):
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [str(root / relative)]
            sys.modules[name] = package
    sys.modules["ragen"].env = sys.modules["ragen.env"]
    return importlib.import_module(module)


def recorded_seeds() -> list[int]:
    """Seeds 0-99 and the test panel's seeds."""
    return sorted(set(range(100)) | set(TEST_SEEDS))


def plain(value):
    """JSON-ready: numpy scalars and arrays (also inside dicts and lists) as Python values."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


def observation_field(obs: str, step: int, full_steps: int) -> dict:
    """A step's observation: whole for the first ``full_steps`` steps, then the first 16 hex digits
    of its SHA-256 (``obs_sha256_16``)."""
    if step < full_steps:
        return {"obs": obs}
    return {"obs_sha256_16": hashlib.sha256(obs.encode("utf-8")).hexdigest()[:16]}


def step_records(env, next_action: Callable[[], Any], steps: int, full_steps: int) -> list[dict]:
    """Up to ``steps`` steps of a RAGEN-2 env (``step`` returns obs, reward, done, info), stopping
    at ``done``: each step's action (``next_action()``, asked before the step), observation
    (:func:`observation_field`), reward, done flag and info."""
    records = []
    for step in range(steps):
        action = next_action()
        obs, reward, done, info = env.step(action)
        records.append(
            {
                "action": action,
                **observation_field(obs, step, full_steps),
                "reward": reward,
                "done": bool(done),
                "info": plain(info),
            }
        )
        if done:
            break
    return records


def write_jsonl(name: str, records: Iterable[dict], compress: bool = False) -> Path:
    """Write ``tests/fixtures/ragen2/<name>.jsonl`` (one record a line, keys sorted).

    ``compress=True`` writes ``<name>.jsonl.gz`` instead, byte-reproducible (no timestamp
    or file name in the gzip header).
    """
    FIXTURE_DIR.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n" for record in records)
    data = text.encode("utf-8")
    if compress:
        path = FIXTURE_DIR / f"{name}.jsonl.gz"
        data = gzip.compress(data, compresslevel=9, mtime=0)
    else:
        path = FIXTURE_DIR / f"{name}.jsonl"
    path.write_bytes(data)
    return path
