"""The collapse diagnostics' scoring rows, run through veRL's own FSDP actor engine on a CPU.

``tests_verl/cpu_engine.py`` builds veRL 0.9.1's ``FSDPEngineWithLMHead`` as its actor worker
does (a CPU platform registered first; see its docstring) and scores (prompt, reasoning) pairs
with our :class:`~ragen_bench.integrations.verl.collapse.WorkerScorer` through the engine's
``infer_batch``: the rows we store are rows veRL's engine reads, and the log-probs we read back
(``log_probs[t]`` = log p(``input_ids[t + 1]``), never the last slot, which a micro-batch of
several rows fills with the next row's first token) are the local trainer's forward.  Each case
runs in a fresh process: the platform and the process group are global.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("micro_batch", [1, 3])
def test_verls_engine_scores_the_rows_as_the_local_forward_does(micro_batch):
    done = subprocess.run([sys.executable, "-m", "tests_verl.cpu_engine", str(micro_batch)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["max_abs_total"] < 1e-4 and found["max_abs_mean"] < 1e-5, found
    assert found["repeated_column_equal"] and found["left_in_queue"] == 0
    # 3 distinct prompts x 5 reasonings, padded to the dispatch's multiple (3 x the micro-batch).
    assert found["batches"] == [15 + (-15 % found["multiple"])] and found["multiple"] == 3 * micro_batch
