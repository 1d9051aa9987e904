"""``ragen-bench train``: the single-machine StarPO / StarPO-S trainer and its supervised warm start.

Above :mod:`ragen_bench.eval` in the layer order (validation runs the real eval harness);
the algorithm itself (advantages, filter, losses, rollouts) lives in :mod:`ragen_bench.starpo`.
``config`` needs only Hydra; ``trainer``, ``models`` and ``checkpoint`` import torch.
"""
