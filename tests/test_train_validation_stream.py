"""The trainer's validation and test runs sample from the stream their manifests say.

The trainer's evals use the stream ``derived_seed(seed, "eval")``; an earlier version set it on
the eval config after the agent config had copied the default (0), so the agent sampled from
stream 0 while the run's top-level ``sampling_seed`` said otherwise.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from ragen_bench.train import config as train_config  # noqa: E402
from ragen_bench.train.schedule import derived_seed  # noqa: E402
from ragen_bench.train.validation import evaluate  # noqa: E402

SMALL = ["model=tiny", "env=RAGEN/Bandit-v0", "rollout.max_new_tokens=6", "chat.max_turns=1", "val.every=0",
         "test.split=null", "log.progress=false", "threads=1"]


@pytest.mark.parametrize("seed", [0, 7])
def test_the_agent_samples_from_the_trainers_eval_stream(tmp_path, seed):
    config = train_config.from_preset("starpo-s", [*SMALL, f"seed={seed}", f"out={tmp_path / 'run'}"])
    run = evaluate(config, "tiny", "val", limit=4, temperature=1.0, samples=1, out=tmp_path / "val")
    manifest = json.loads((run.out / "manifest.json").read_text())["config"]
    stream = derived_seed(seed, "eval")
    assert stream != 0
    assert manifest["sampling_seed"] == stream
    assert manifest["agent"]["sampling_seed"] == stream
