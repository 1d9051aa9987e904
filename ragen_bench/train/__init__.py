"""``ragen-bench train``: the single-machine StarPO / StarPO-S trainer and its supervised warm start.

Above :mod:`ragen_bench.eval` in the layer order (validation runs the real eval harness);
the algorithm itself (advantages, filter, losses, the SFT loss) lives in :mod:`ragen_bench.starpo`.
The rollout side, one job per module: ``policy_agent`` (the agent that records what it
sampled), ``sampler`` (its batched KV-cache decoding), ``stops`` (where a reply ends),
``cache_patches`` (transformers attention and cache patches), ``batch`` (training tensors
from finished episodes) and ``sft_data`` (warm-start records, export, rows); the token
layout they share is :mod:`ragen_bench.chat.tokens`.  ``config`` needs only Hydra;
``trainer``, ``models`` and ``checkpoint`` import torch.
"""
