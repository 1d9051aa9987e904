"""Evaluation: agents on frozen seed panels, into resumable run directories.

One module per job; a module imports only modules listed before it (no cycles)::

    metrics, rundir, schema  ->  compose, targets, derive  ->  config  ->  plan  ->  provenance
        ->  report  ->  games  ->  run, merge

* :mod:`.schema` -- what an eval config may hold (keys, defaults, limits, ``ConfigError``);
* :mod:`.compose` -- compose the Hydra config; :mod:`.config` -- validate all of it;
* :mod:`.targets` -- the ``(env_id, split)`` pairs a config evaluates (a suite resolved);
* :mod:`.derive` -- what a validated config implies (ChatConfig, game config, identity, opponent);
* :mod:`.plan` -- the episodes of a run (seeds x samples, limit, shard);
* :mod:`.provenance` -- run identity (fingerprint), secret redaction, the manifest;
* :mod:`.report` -- ``summary.json`` and the tables of ``compare``;
* :mod:`.run` -- :func:`run_eval`, playing and resuming a run;
* :mod:`.merge` -- :func:`merge_runs`, shards into one run;
* :mod:`.games` -- multi-agent games against an ``opponent`` (seats, win/draw/loss);
* :mod:`.rundir` -- crash-safe run-directory I/O; :mod:`.metrics` -- pure metrics.

Importing this package is light; the chat layer and agents are imported when a run
starts.
"""

from ragen_bench.eval.compose import compose_config
from ragen_bench.eval.merge import merge_runs
from ragen_bench.eval.metrics import pass_at_k, summarize, wilson_interval
from ragen_bench.eval.run import EvalResult, run_eval
from ragen_bench.eval.rundir import RunDirError
from ragen_bench.eval.schema import ConfigError

__all__ = [
    "ConfigError", "EvalResult", "RunDirError", "compose_config", "merge_runs", "pass_at_k", "run_eval",
    "summarize", "wilson_interval",
]
