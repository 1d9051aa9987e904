"""Which episodes a run plays: panel seeds x samples, cut by ``limit``, a suite's episode counts and ``shard``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from ragen_bench import panels as panels_module
from ragen_bench.eval.rundir import EpisodeSlot


@dataclass(frozen=True)
class Instance:
    """One episode to run: a panel seed and a sample index."""

    env_id: str
    split: str
    seed: int
    sample: int

    @property
    def slot(self) -> EpisodeSlot:
        return (self.env_id, self.split, self.seed, self.sample)


def panel_cut(limit: int | None, count: int | None) -> int | None:
    """How many first seeds of a panel a run plays: the smaller of ``limit`` and the suite's ``count`` (None: all)."""
    return min(n for n in (limit, count) if n is not None) if (limit, count) != (None, None) else None


def plan(
    panels: Sequence[panels_module.Panel], *, samples: int, limit: int | None, shard: tuple[int, int],
    counts: Mapping[tuple[str, str], int] | None = None,
) -> list[Instance]:
    """Episodes of a run, in order: panel seeds (first ``limit`` of each, or fewer where the
    suite's ``counts`` say so) x samples.

    Instances (seeds) are numbered across all panels in order; shard ``i/n`` keeps
    those whose number is ``i`` modulo ``n``.  All samples of a seed stay in one shard,
    so every shard can report pass@k on its own.  (The config is validated before.)
    """
    index, count = shard
    counts = counts or {}
    seeds = [(panel, seed) for panel in panels
             for seed in panel.seeds[:panel_cut(limit, counts.get((panel.env_id, panel.split)))]]
    return [
        Instance(panel.env_id, panel.split, seed, sample)
        for number, (panel, seed) in enumerate(seeds)
        if number % count == index
        for sample in range(samples)
    ]


def batches(instances: Sequence[Instance], size: int) -> Iterator[Sequence[Instance]]:
    """Consecutive slices of at most ``size`` instances (the lock-step groups).

    A batch may span env ids: a model agent then fills its batched calls even when
    panels are cut short by ``limit``.
    """
    for start in range(0, len(instances), size):
        yield instances[start : start + size]
