"""Merging shard run directories into one run whose summary equals an unsharded run's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragen_bench import panels as panels_module
from ragen_bench import runfiles
from ragen_bench.eval import games, metrics, provenance, report, rundir
from ragen_bench.eval.config import ConfigError, eval_targets, parse_shard
from ragen_bench.eval.plan import Instance, plan
from ragen_bench.eval.rundir import EpisodeSlot, RunDirError
from ragen_bench.suites import SuiteError, episode_counts


def _unsharded(fingerprint_: Mapping[str, Any]) -> dict[str, Any]:
    config = dict(fingerprint_["config"], shard="0/1")
    return dict(fingerprint_, config=config)


def _plan_of(path: Path, manifest: Mapping[str, Any], shard: str) -> list[Instance]:
    """The episodes the run recorded in ``manifest`` plans for ``shard``, from today's panel files.

    The panels must still be the ones the run used, or the plan would be another one.
    """
    config = manifest["config"]
    try:
        targets = eval_targets(config)
        shard_ = parse_shard(shard)
        samples, limit = config["samples"], config["limit"]
        counts = episode_counts(config.get("suite"), targets)
    except (ConfigError, KeyError, SuiteError) as error:
        raise RunDirError(f"{path / rundir.MANIFEST}: config is malformed ({error})") from None
    panels = [panels_module.load(env_id, split) for env_id, split in targets]
    for panel in panels:
        recorded = manifest["panels"].get(f"{panel.env_id}:{panel.split}")
        if recorded != panel.checksum:
            raise RunDirError(
                f"{path / rundir.MANIFEST}: panel {panel.env_id}:{panel.split} has checksum {recorded!r} there "
                f"but {panel.checksum!r} in this installation"
            )
    return plan(panels, samples=samples, limit=limit, shard=shard_, counts=counts)


def _check_out(inputs: Sequence[Path], out: Path) -> None:
    resolved = out.resolve()
    for path in inputs:
        if path.resolve() == resolved:
            raise RunDirError(f"merge --out {out} is one of the inputs; merge into a new directory")
    if any((out / name).exists() for name in (rundir.MANIFEST, rundir.EPISODES)):
        raise RunDirError(f"{out} already holds a run; merge into a new directory")
    # (The lock file is ours: this check runs again while holding it.)
    if out.is_dir() and any(path.name != rundir.LOCK for path in out.iterdir()):
        raise RunDirError(f"merge --out {out} holds other files; merge into a new or empty directory")


def merge_runs(inputs: Sequence[Path], out: Path) -> dict[str, Any]:
    """Combine the run directories ``inputs`` (shards of one run) into ``out``.

    The inputs must hold the same run up to ``shard``, each only episodes of its own
    shard's plan, and must not share an episode.  The merged run is ``complete`` when
    its episodes cover the whole unsharded plan, whatever the inputs' flags say.
    Returns the merged summary, which equals an unsharded run's.
    """
    if not inputs:
        raise ValueError("merge needs at least one input run directory")
    inputs = [Path(path) for path in inputs]
    out = Path(out)
    _check_out(inputs, out)
    manifests = [provenance.require_manifest(path) for path in inputs]
    unsharded = [_unsharded(provenance.fingerprint_of(manifest)) for manifest in manifests]
    for path, other in zip(inputs[1:], unsharded[1:]):
        runfiles.require_same_config(path, unsharded[0], other, error=RunDirError)

    records: dict[EpisodeSlot, dict[str, Any]] = {}
    rows: dict[EpisodeSlot, metrics.Row] = {}
    origin: dict[EpisodeSlot, Path] = {}
    for path, manifest in zip(inputs, manifests):
        planned = {i.slot for i in _plan_of(path, manifest, manifest["config"]["shard"])}
        log = path / rundir.EPISODES
        for number, record in rundir.PlannedEpisodes(log, planned):
            slot = rundir.slot_of(record)
            if slot in records:
                raise RunDirError(f"episode {slot} is in both {origin[slot]} and {path}")
            records[slot], rows[slot], origin[slot] = record, report.row_of(log, number, record), path
    whole = {i.slot for i in _plan_of(inputs[0], manifests[0], "0/1")}

    with rundir.locked(out):
        _check_out(inputs, out)  # again under the lock: another merge may have been quicker
        order = sorted(records)
        rundir.write_episodes(out / rundir.EPISODES, [records[slot] for slot in order])
        summary = report.write_summary(out, [rows[slot] for slot in order], unsharded[0])
        if any("game" in record for record in records.values()):
            summary["games"] = games.add_game_summary(out)  # as an unsharded game run has it
        manifest = dict(manifests[0])
        manifest.update(
            unsharded[0],
            merged_from=[{"path": str(p), "shard": m["config"]["shard"]} for p, m in zip(inputs, manifests)],
            expected_episodes=len(whole),
            started_at=min(m["started_at"] for m in manifests),
            finished_at=provenance.utc_now(),
            complete=set(records) >= whole,
        )
        runfiles.write_json_atomic(out / rundir.MANIFEST, manifest)
    return summary
