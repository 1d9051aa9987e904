"""Evaluation: the harness (:mod:`.harness`), metrics (:mod:`.metrics`) and run-directory I/O (:mod:`.rundir`).

Importing this package is light; the chat layer and agents are imported when a run
starts.
"""

from ragen_bench.eval.harness import EvalResult, merge_runs, run_eval
from ragen_bench.eval.metrics import pass_at_k, summarize, wilson_interval
from ragen_bench.eval.rundir import RunDirError

__all__ = ["EvalResult", "RunDirError", "merge_runs", "pass_at_k", "run_eval", "summarize", "wilson_interval"]
