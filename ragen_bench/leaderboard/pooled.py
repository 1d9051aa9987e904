"""One paired claim over several sampling streams: ``ragen-bench compare --paired A1 B1 A2 B2 ...``.

Each pair is the same two models (A, e.g. the start; B, e.g. the trained checkpoint) on the
same episodes, sampled with one stream (a sampling seed and temperature; greedy is a stream
too).  Each stream gets McNemar's exact test (:func:`ragen_bench.leaderboard.stats.mcnemar_exact`),
and the streams are pooled by the **exact sign test over every discordant pair of every
stream** (a stratified McNemar): under "A and B are equally good" each discordant pair is
equally likely to favour either, whatever its stream, so the pooled count of pairs B won is
Binomial(discordant pairs, 1/2).  Concordant pairs carry no information about the
difference in either test, so none is lost by ignoring them.

The streams share their seeds: they are not independent replicates of the seeds.  The pooled
test is a test over episodes *given these seeds* (a gain larger than these seeds' sampling
noise), not a claim about new seeds; a claim about new seeds needs more seeds.

Between pairs only the stream may differ: the top-level ``sampling_seed``, ``agent.sampling_seed``
and ``agent.temperature`` (:data:`ragen_bench.leaderboard.streams.STREAM_KEYS`).  Everything else in each side's config (model,
chat, panels, samples) and the set of episodes must be the pair's first's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragen_bench import runfiles
from ragen_bench.leaderboard.errors import LeaderboardError
from ragen_bench.leaderboard.stats import compare_runs, format_comparison, mcnemar_exact, p_text
from ragen_bench.leaderboard.streams import STREAM_KEYS, stream_name, stream_of, without_keys

def pool_streams(streams: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The pooled row of per-stream rows (each with ``pairs``, ``success_a``, ``success_b``, ``only_a``, ``only_b``).

    ``mcnemar_p`` of the pooled row is the exact two-sided sign test over all discordant pairs;
    ``directions`` says which side each stream favours (``"A"``, ``"B"`` or ``"even"``) and
    ``disagree`` whether some stream favours A and another B.
    """
    if not streams:
        raise ValueError("no streams to pool")
    pairs = sum(row["pairs"] for row in streams)
    only_a, only_b = sum(row["only_a"] for row in streams), sum(row["only_b"] for row in streams)
    directions = ["A" if row["only_a"] > row["only_b"] else "B" if row["only_b"] > row["only_a"] else "even"
                  for row in streams]
    return {
        "env": "pooled", "pairs": pairs,
        "success_a": sum(row["success_a"] * row["pairs"] for row in streams) / pairs,
        "success_b": sum(row["success_b"] * row["pairs"] for row in streams) / pairs,
        "only_a": only_a, "only_b": only_b, "mcnemar_p": mcnemar_exact(only_a, only_b),
        "directions": directions, "disagree": {"A", "B"} <= set(directions),
    }


def compare_streams(runs: Sequence[Path], *, seed: int = 0) -> dict[str, Any]:
    """Pair ``runs`` as ``A1 B1 A2 B2 ...``: one row per stream and the pooled row; refused unless comparable."""
    from ragen_bench.eval import report

    if len(runs) < 4 or len(runs) % 2:
        raise ValueError("--paired takes exactly two run directories, or pairs of them (A1 B1 A2 B2 ...), "
                         f"got {len(runs)}")
    configs = [report.load_summary(run)[0]["config"] for run in runs]
    for index in range(0, len(runs), 2):
        _same(configs[index], configs[index + 1], runs[index], runs[index + 1], keep=True)
    for index in range(2, len(runs)):
        _same(configs[index % 2], configs[index], runs[index % 2], runs[index], drop=STREAM_KEYS)
    names = [stream_name(configs[index]) for index in range(0, len(runs), 2)]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise LeaderboardError(f"stream {repeated[0]} is paired more than once: its episodes would count twice",
                               field="sampling_seed")
    rows, slots = [], None
    for index, name in zip(range(0, len(runs), 2), names):
        result = compare_runs(runs[index], runs[index + 1], seed=seed)
        these = _slots(runs[index])
        if slots is not None and these != slots:
            raise LeaderboardError(f"cannot pool the pairs: {runs[index]} holds other episodes than {runs[0]}",
                                   field="episodes")
        slots = these
        rows.append({**result["groups"][-1], "env": name})
    return {"a": [str(run) for run in runs[::2]], "b": [str(run) for run in runs[1::2]], "streams": rows,
            "pooled": pool_streams(rows)}


def _same(config_a: Mapping[str, Any], config_b: Mapping[str, Any], path_a: Path, path_b: Path, *,
          keep: bool = False, drop: Sequence[tuple[str, ...]] = ()) -> None:
    """Refuse two runs on other streams (``keep``) or whose configs differ outside ``drop``, naming the key."""
    def project(config: Mapping[str, Any]) -> dict[str, Any]:
        return stream_of(config) if keep else without_keys(config, drop)

    found = runfiles.difference(project(config_a), project(config_b))
    if found is not None:
        where, in_a, in_b = found
        what = "a pair's two runs must share their stream" if keep else "pairs may differ only in the stream"
        raise LeaderboardError(f"cannot pool {path_a} with {path_b}: {what} ({in_a!r} vs {in_b!r})", field=where)


def _slots(run: Path) -> set[tuple[str, str, int, int]]:
    import json

    from ragen_bench.eval.rundir import EPISODES

    lines = (run / EPISODES).read_text(encoding="utf-8").splitlines()
    return {(row["env_id"], row["split"], row["seed"], row["sample"]) for row in map(json.loads, filter(str.strip, lines))}


def format_streams(result: Mapping[str, Any]) -> str:
    """The per-stream rows, the pooled row, and what the pooled test is and is not."""
    from ragen_bench.eval.report import format_table

    pooled = result["pooled"]
    rows = [{"stream": row["env"], "pairs": row["pairs"], "success A": row["success_a"], "success B": row["success_b"],
             "only A": row["only_a"], "only B": row["only_b"], "McNemar p": p_text(row["mcnemar_p"])}
            for row in [*result["streams"], {**pooled, "env": f"pooled ({len(result['streams'])} streams)"}]]
    lines = [f"A = {', '.join(result['a'])}", f"B = {', '.join(result['b'])}", format_table(rows),
             f"pooled: exact sign test over all {pooled['only_a'] + pooled['only_b']} discordant pairs "
             "(stratified McNemar); the streams share their seeds, so this tests these seeds' sampling noise, "
             "not new seeds"]
    if pooled["disagree"]:
        ahead = {side: [row["env"] for row, d in zip(result["streams"], pooled["directions"]) if d == side]
                 for side in ("A", "B")}
        lines.append(f"warning: the streams disagree in direction: A ahead on {', '.join(ahead['A'])}; "
                     f"B ahead on {', '.join(ahead['B'])}")
    return "\n".join(lines)


def paired_text(runs: Sequence[Path], *, seed: int = 0) -> str:
    """What ``compare --paired`` prints: the two-run table for two runs, the stream table for pairs of them."""
    if len(runs) == 2:
        return format_comparison(compare_runs(runs[0], runs[1], seed=seed))
    return format_streams(compare_streams(runs, seed=seed))
