"""Evaluation: agents on frozen seed panels, into resumable run directories.

One module per job; a module imports only modules listed before it (no cycles)::

    metrics, rundir, budget  ->  config  ->  compose, plan  ->  provenance  ->  report
        ->  games  ->  run, merge  ->  replay

* :mod:`.budget` -- chat budgets in a run: each id's declared budget made concrete, the chat
  settings it gives each id, the run's template hash;
* :mod:`.config` -- the eval config: its keys, defaults and limits, ``ConfigError``, and
  :func:`~.config.load`, which checks a composed config once and derives all it implies
  (targets, ChatConfig, each id's budgeted chat, game config, opponent, shard, run directory,
  identity) into a
  frozen :class:`~.config.EvalConfig`;
* :mod:`.compose` -- ``configs/eval.yaml`` plus command-line overrides (Hydra), as a dict;
* :mod:`.plan` -- the episodes of a run (seeds x samples, limit, shard);
* :mod:`.provenance` -- run identity (fingerprint), secret redaction, the manifest;
* :mod:`.report` -- ``summary.json`` and the tables of ``compare``;
* :mod:`.games` -- multi-agent games against an ``opponent`` (seats, win/draw/loss);
* :mod:`.run` -- :func:`run_eval`, playing and resuming a run;
* :mod:`.merge` -- :func:`merge_runs`, shards into one run;
* :mod:`.replay` -- a recorded episode or game played again and compared field by field;
* :mod:`.rundir` -- crash-safe run-directory I/O; :mod:`.metrics` -- pure metrics.

Importing this package is light; the chat layer and agents are imported when a run
starts.
"""

from ragen_bench.eval.compose import compose_config
from ragen_bench.eval.config import ConfigError
from ragen_bench.eval.merge import merge_runs
from ragen_bench.eval.metrics import pass_at_k, summarize, wilson_interval
from ragen_bench.eval.run import EvalResult, run_eval
from ragen_bench.eval.rundir import RunDirError

__all__ = [
    "ConfigError", "EvalResult", "RunDirError", "compose_config", "merge_runs", "pass_at_k", "run_eval",
    "summarize", "wilson_interval",
]
