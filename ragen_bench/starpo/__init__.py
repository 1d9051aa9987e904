"""StarPO algorithm core: advantages, the StarPO-S rollout filter and the PPO losses.

Pure functions on ``torch`` tensors, one module per concern, so the single-machine trainer
and the veRL integration share the same definitions:

- :mod:`ragen_bench.starpo.masked`: masked mean / variance / whitening.
- :mod:`ragen_bench.starpo.groups`: per-group statistics of trajectory scores.
- :mod:`ragen_bench.starpo.advantages`: token-level GAE, GRPO / RLOO outcome advantages,
  bi-level (turn + token) GAE.
- :mod:`ragen_bench.starpo.filter`: the StarPO-S filter (keep the groups whose scores vary most).
- :mod:`ragen_bench.starpo.losses`: loss aggregation, clipped policy loss with dual clip,
  entropy, KL estimators, clipped value loss.
- :mod:`ragen_bench.starpo.rollout`: a policy agent that keeps the sampled token ids and
  their log-probs per turn (shared-prompt groups, stop at ``</answer>``), and the builder
  of training batches from finished episodes.
- :mod:`ragen_bench.starpo.forward`: training forward passes (log-probs, entropies and hidden
  states of response tokens only; a batch's shared leading tokens encoded once).
- :mod:`ragen_bench.starpo.sft`: supervised warm-start records, export and loss.

This package module imports nothing heavy: ``import ragen_bench.starpo`` works without torch;
import the submodules for the functions.  docs/starpo.md gives the definitions in math.
"""
