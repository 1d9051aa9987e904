"""Evaluation on a Ray cluster (``ragen-bench eval ... launcher=ray``); the only package that imports ray.

See :mod:`.launcher` and docs/scale-out.md.  Needs the ``ray`` extra.
"""

from ragen_bench.integrations.ray.launcher import run_eval_on_ray

__all__ = ["run_eval_on_ray"]
