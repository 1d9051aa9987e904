"""StarPO algorithm core: advantages, the StarPO-S rollout filter, the PPO losses and the SFT loss.

Pure functions on ``torch`` tensors, one module per concern, importing nothing of this project
above them, so the single-machine trainer and the veRL integration share the same definitions
(the policy agent, its sampler, the batch builder and the SFT data live on the trainer's side,
in :mod:`ragen_bench.train`):

- :mod:`ragen_bench.starpo.masked`: masked mean / variance / whitening.
- :mod:`ragen_bench.starpo.groups`: per-group statistics of trajectory scores.
- :mod:`ragen_bench.starpo.advantages`: token-level GAE, GRPO / RLOO outcome advantages,
  bi-level (turn + token) GAE.
- :mod:`ragen_bench.starpo.filter`: the rollout filter (RAGEN-2's strategies over group metrics;
  StarPO-S's keep-the-groups-whose-scores-vary-most as its preset); its settings and kept-group
  counts, which need no torch, are :mod:`ragen_bench.starpo.filter_spec`.
- :mod:`ragen_bench.starpo.shaping`: DAPO's overlong reward shaping.
- :mod:`ragen_bench.starpo.losses`: loss aggregation, clipped policy loss with dual clip,
  entropy, KL estimators, clipped value loss.
- :mod:`ragen_bench.starpo.forward`: training forward passes (log-probs, entropies and hidden
  states of response tokens only; a batch's shared leading tokens encoded once).
- :mod:`ragen_bench.starpo.sft`: the supervised warm-start loss.
- :mod:`ragen_bench.starpo.collapse`: RAGEN-2's collapse diagnostics (mutual-information proxies,
  reasoning entropy, prompt retrieval) on a matrix of cross log-probabilities.

This package module imports nothing heavy: ``import ragen_bench.starpo`` works without torch;
import the submodules for the functions.  docs/starpo.md gives the definitions in math.
"""
