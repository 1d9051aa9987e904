"""The test panel's sampling streams, fixed in advance from a recipe's seed.

A claimed gain is scored on several sampling streams chosen before anyone looks at the test
panel (docs/train.md, "Claiming a gain: the protocol").  Stream ``k`` (``k = 1, 2, ...``) of
a recipe whose train ``seed`` is ``s`` samples with ``sampling_seed = stream_seed(s, k)``.
The trainer's own validation and test evaluations sample with another stream (the
``agent.sampling_seed`` their manifests record), the one its checkpoints were chosen on; the
test streams are derived under their own label, so none of them is that stream.

Configs reach the function through the OmegaConf resolver ``test_stream``:
``ragen-bench eval ... 'sampling_seed=${test_stream:0,1}'`` is stream 1 of seed 0.
"""

from __future__ import annotations

from ragen_bench.agents.sampling import derived_seed

RESOLVER = "test_stream"
# The label of derived_seed: a stream's seed is independent of every other use of the recipe's seed.
STREAM_LABEL = "test-stream"


def stream_seed(seed: int, k: int) -> int:
    """The sampling seed of test stream ``k`` (``k >= 1``) of a recipe with train seed ``seed``."""
    for name, value, low in (("seed", seed, 0), ("k", k, 1)):
        if type(value) is not int or not low <= value < 2**32:
            raise ValueError(f"{RESOLVER}: {name} must be an int in {low}..{2**32 - 1}, got {value!r}")
    return derived_seed(seed, STREAM_LABEL, k)


def register_resolver() -> None:
    """Make ``${test_stream:SEED,K}`` resolve in the eval and train configs (idempotent)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver(RESOLVER):
        OmegaConf.register_new_resolver(RESOLVER, stream_seed)
