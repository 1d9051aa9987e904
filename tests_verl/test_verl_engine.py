"""Our rows through veRL's own FSDP2 actor engine, built on a CPU (``tests_verl/cpu_engine.py``).

veRL 0.9.1's ``FSDPEngineWithLMHead`` is built as its actor worker builds it (a CPU platform
registered first; see that module's docstring), and two paths of a veRL step run through it:

* the collapse diagnostics' scoring rows (:class:`~ragen_bench.integrations.verl.collapse.WorkerScorer`)
  through the engine's ``infer_batch``: the rows we store are rows veRL's engine reads, and the
  log-probs we read back (``log_probs[t]`` = log p(``input_ids[t + 1]``), never the last slot,
  which a micro-batch of several rows fills with the next row's first token) are the local
  trainer's forward;
* veRL's actor loss (``ppo_loss``, the preset's clip range, dual clip and loss aggregation as
  the recipe maps them) and its gradient through the engine's forward-backward, against the
  local trainer's ``policy_loss`` on the same multi-turn rows (observation gaps in the mask),
  old log-probs and advantages: the same algorithm, on veRL's own engine.

Each case runs in a fresh process: the platform and the process group are global.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args):
    done = subprocess.run([sys.executable, "-m", "tests_verl.cpu_engine", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("micro_batch", [1, 3])
def test_verls_engine_scores_the_collapse_rows_as_the_local_forward_does(micro_batch):
    found = run("score", micro_batch)
    assert found["max_abs_total"] < 1e-4 and found["max_abs_mean"] < 1e-5, found
    assert found["repeated_column_equal"] and found["left_in_queue"] == 0
    # 3 distinct prompts x 5 reasonings, padded to the dispatch's multiple (3 x the micro-batch).
    assert found["batches"] == [15 + (-15 % found["multiple"])] and found["multiple"] == 3 * micro_batch


@pytest.mark.parametrize("preset, micro_batch, agg", [("starpo-s", 1, "seq-mean-token-mean"),
                                                       ("starpo-s", 2, "seq-mean-token-mean"),
                                                       ("dapo", 2, "token-mean"), ("drgrpo", 4, "seq-mean-token-sum")])
def test_verls_actor_loss_and_gradient_are_the_local_trainers(preset, micro_batch, agg):
    found = run("update", micro_batch, preset)
    assert found["agg"] == agg
    assert found["verl_loss"] == pytest.approx(found["local_loss"], rel=1e-5, abs=1e-7), found
    assert found["max_relative_grad_diff"] < 1e-5, found
    assert 0.1 < found["clipped"] < 0.9  # the clip is exercised, not idle
