"""The evaluation harness: panels x samples through the chat layer, into a run directory.

:func:`run_eval` takes a plain config mapping (what ``ragen-bench eval`` composes with
Hydra; see ``configs/eval.yaml``), plans the episodes (panel seeds x samples, cut by
``limit`` and ``shard``), skips those already in the run directory, and drives the
rest with :func:`ragen_bench.chat.run_lockstep` in batches of ``batch_size``: every
live episode of a batch advances one turn per batched agent call.  Each finished
episode is appended to ``episodes.jsonl`` at once (see :mod:`ragen_bench.eval.rundir`
for the durability guarantee), so re-running the same command resumes the run.

:func:`merge_runs` combines shard directories into one whose summary equals that of
an unsharded run.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import importlib.metadata
import os
import platform
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium

import ragen_bench
from ragen_bench import panels as panels_module
from ragen_bench.eval import metrics, rundir
from ragen_bench.eval.rundir import EpisodeKey, RunDirError

# Config keys that say where or how visibly a run happens, not what it computes; a
# run may be resumed with different values for these.
RUNTIME_KEYS = ("out", "progress")
REDACTED = "<redacted>"
_SECRET_NAME = re.compile(r"(^|_)(api_?key|key|secret|password|token|auth|authorization|credentials?)$", re.I)
_PACKAGES = ("gymnasium", "numpy", "torch", "transformers", "vllm", "hydra-core")


@dataclass(frozen=True)
class Instance:
    """One episode to run: a panel seed and a sample index."""

    env_id: str
    split: str
    seed: int
    sample: int

    @property
    def key(self) -> EpisodeKey:
        return (self.env_id, self.split, self.seed, self.sample)


@dataclass(frozen=True)
class EvalResult:
    out: Path
    summary: dict[str, Any]
    new_episodes: int
    complete: bool


# ---------------------------------------------------------------- planning


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` -> ``(i, n)`` with ``0 <= i < n``."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
    if not match:
        raise ValueError(f"shard must look like 'i/n' (e.g. 0/4), got {text!r}")
    index, count = int(match[1]), int(match[2])
    if not 0 <= index < count:
        raise ValueError(f"shard index must be in 0..{count - 1}, got {text!r}")
    return index, count


def eval_targets(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The ``(env_id, split)`` pairs to evaluate: one env, or a suite's eval pairs.

    With a suite, a given ``split`` keeps only that split's pairs.
    """
    env_id, suite_name, split = config.get("env"), config.get("suite"), config.get("split")
    if bool(env_id) == bool(suite_name):
        raise ValueError("give exactly one of env=<id> or suite=<name>")
    if env_id:
        return [(str(env_id), str(split or "test"))]
    from ragen_bench import suites

    suite = suites.get(str(suite_name))
    # A panel evaluated by several tracks is run once.
    pairs = list(dict.fromkeys((p.env_id, p.split) for track in suite.tracks for p in track.evaluate))
    if split:
        pairs = [pair for pair in pairs if pair[1] == split]
        if not pairs:
            raise ValueError(f"suite {suite_name!r} has no eval pairs with split {split!r}")
    return pairs


def plan(
    panels: Sequence[panels_module.Panel], *, samples: int, limit: int | None, shard: tuple[int, int]
) -> list[Instance]:
    """Episodes of a run, in order: panel seeds (first ``limit`` of each) x samples.

    Instances (seeds) are numbered across all panels in order; shard ``i/n`` keeps
    those whose number is ``i`` modulo ``n``.  All samples of a seed stay in one shard,
    so every shard can report pass@k on its own.
    """
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1 or null, got {limit}")
    index, count = shard
    seeds = [(panel, seed) for panel in panels for seed in panel.seeds[:limit]]
    return [
        Instance(panel.env_id, panel.split, seed, sample)
        for number, (panel, seed) in enumerate(seeds)
        if number % count == index
        for sample in range(samples)
    ]


# ---------------------------------------------------------------- config and manifest


def redact(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A copy with the value of every secret-looking key (``api_key``, ...) replaced."""
    return {
        key: REDACTED if _SECRET_NAME.search(str(key)) and value is not None else value
        for key, value in settings.items()
    }


def identity_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """What a run computes: the config without runtime keys and without secrets."""
    identity = {key: value for key, value in config.items() if key not in RUNTIME_KEYS}
    identity["agent"] = redact(config["agent"])
    return identity


def default_out(config: Mapping[str, Any]) -> Path:
    """``runs/<agent>-<env or suite>-<split>``: deterministic, so re-running resumes."""
    parts = [config["agent"]["name"], config.get("env") or config.get("suite"), config.get("split") or "all"]
    return Path("runs") / re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(str(part) for part in parts))


def _utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def git_state(checkout: Path) -> dict[str, Any] | None:
    """Commit and dirty flag when ``checkout`` is the top of a git work tree.

    Requiring the top level (not just any enclosing repository) keeps an installed
    copy inside someone else's repository from reporting that repository's commit.
    """
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--show-toplevel", "HEAD"], cwd=checkout, capture_output=True, text=True, timeout=10
        )
        if head.returncode != 0:
            return None
        toplevel, commit = head.stdout.split()
        if Path(toplevel).resolve() != checkout.resolve():
            return None
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=checkout, capture_output=True, text=True, timeout=10,
        )
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    return {"commit": commit, "dirty": bool(status.stdout.strip())}


def package_versions() -> dict[str, str]:
    """Installed versions from package metadata (no package is imported)."""
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def hardware() -> dict[str, Any]:
    """The machine; GPUs only when an agent already imported torch (never imported here)."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return info


def fingerprint(config: Mapping[str, Any], panels: Sequence[panels_module.Panel], template_hash: str) -> dict[str, Any]:
    """Everything that must match for two run directories to hold the same run."""
    return {
        "config": identity_config(config),
        "panels": {f"{panel.env_id}:{panel.split}": panel.checksum for panel in panels},
        "template_hash": template_hash,
    }


def build_manifest(
    fingerprint_: Mapping[str, Any],
    panels: Sequence[panels_module.Panel],
    *,
    expected_episodes: int,
    previous: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The manifest of a (possibly resumed) run, before it finishes."""
    return {
        "format": "ragen-bench/run/v1",
        "ragen_bench_version": ragen_bench.__version__,
        "git": git_state(Path(ragen_bench.__file__).resolve().parent.parent),
        **fingerprint_,
        "envs": [
            {
                "env_id": panel.env_id,
                "split": panel.split,
                "version": panel.env_id.rsplit("-", 1)[-1],
                "panel_checksum": panel.checksum,
                "panel_seeds": len(panel.seeds),
            }
            for panel in panels
        ],
        "python": platform.python_version(),
        "packages": package_versions(),
        "hardware": hardware(),
        "expected_episodes": expected_episodes,
        "started_at": previous["started_at"] if previous else _utc_now(),
        "sessions": (previous["sessions"] if previous else 0) + 1,
        "finished_at": None,
        "complete": False,
    }


def write_summary(out: Path, rows: Sequence[metrics.Row], fingerprint_: Mapping[str, Any]) -> dict[str, Any]:
    """``summary.json``: metrics per env and split, with the panel checksums and template hash.

    Holds nothing about timing or sharding, so any way of producing the same
    episodes gives the same file.
    """
    summary = {
        "panels": fingerprint_["panels"],
        "template_hash": fingerprint_["template_hash"],
        "groups": metrics.summarize(rows),
    }
    rundir.write_json_atomic(out / rundir.SUMMARY, summary)
    return summary


# ---------------------------------------------------------------- running


def build_agent(name: str, settings: Mapping[str, Any]) -> Any:
    """An agent by registered name, or by ``"module:factory"`` for agents outside the package."""
    if ":" in name:
        module_name, factory_name = name.split(":", 1)
        return getattr(importlib.import_module(module_name), factory_name)(**settings)
    from ragen_bench.agents import make_agent

    return make_agent(name, **settings)


class EnvPool:
    """Reusable envs per id, so each batch spares a ``gymnasium.make`` per episode.

    Batches run one after another and every episode resets its env with its own
    seed, so handing the same envs to the next batch is safe.
    """

    def __init__(self) -> None:
        self._envs: dict[str, list[gymnasium.Env[Any, Any]]] = {}

    def take(self, env_ids: Sequence[str]) -> list[gymnasium.Env[Any, Any]]:
        """One distinct env for each entry of ``env_ids`` (an id may repeat)."""
        taken: dict[str, int] = {}
        envs = []
        for env_id in env_ids:
            index = taken[env_id] = taken.get(env_id, -1) + 1
            pool = self._envs.setdefault(env_id, [])
            if index == len(pool):
                pool.append(gymnasium.make(env_id))
            envs.append(pool[index])
        return envs

    def close(self) -> None:
        for envs in self._envs.values():
            for env in envs:
                env.close()
        self._envs.clear()


def batches(instances: Sequence[Instance], size: int) -> Iterator[Sequence[Instance]]:
    """Consecutive slices of at most ``size`` instances.

    A batch may span env ids: a model agent then fills its batched calls even when
    panels are cut short by ``limit``.
    """
    if size < 1:
        raise ValueError(f"batch_size must be >= 1, got {size}")
    for start in range(0, len(instances), size):
        yield instances[start : start + size]


class Progress:
    """Progress bar (tqdm, on stderr): episodes done, success so far, tokens."""

    def __init__(self, total: int, done_rows: Sequence[metrics.Row], enabled: bool):
        from tqdm import tqdm

        self.successes = sum(row["success"] for row in done_rows)
        self.episodes = len(done_rows)
        self.tokens = sum(row["tokens"] or 0 for row in done_rows)
        # disable=None: draw only on a terminal, so logs and CI stay clean.
        self.bar = tqdm(total=total, initial=self.episodes, unit="ep", disable=None if enabled else True)

    def add(self, row: metrics.Row) -> None:
        self.episodes += 1
        self.successes += row["success"]
        self.tokens += row["tokens"] or 0
        self.bar.update(1)

    def refresh(self) -> None:
        rate = self.successes / self.episodes if self.episodes else 0.0
        self.bar.set_postfix(success=f"{rate:.3f}", tokens=self.tokens)

    def close(self) -> None:
        self.bar.close()


def run_eval(config: Mapping[str, Any]) -> EvalResult:
    """Run (or resume) the evaluation ``config`` describes; see the module docstring."""
    from ragen_bench.chat import ChatConfig, ChatEpisode, run_lockstep

    agent_config = dict(config["agent"])
    agent_name = agent_config.pop("name")
    chat_config = ChatConfig(**config["chat"])
    out = Path(config.get("out") or default_out(config))
    panels = [panels_module.load(env_id, split) for env_id, split in eval_targets(config)]
    instances = plan(
        panels, samples=int(config["samples"]), limit=config.get("limit"), shard=parse_shard(config["shard"])
    )
    fingerprint_ = fingerprint(config, panels, chat_config.template_hash())

    with rundir.locked(out):
        previous = _read_manifest(out)
        if previous is not None:
            rundir.check_same_config(out, _fingerprint_of(previous), fingerprint_)
        elif (out / rundir.EPISODES).exists():
            raise RunDirError(f"{out} has episodes but no {rundir.MANIFEST}: cannot tell which run they belong to")
        # Only the small per-episode rows stay in memory, never the transcripts.
        rows = [metrics.episode_row(r) for r in rundir.iter_episodes(out / rundir.EPISODES, repair=True)]
        done = {rundir.episode_key(row) for row in rows}
        todo = [instance for instance in instances if instance.key not in done]
        manifest = build_manifest(fingerprint_, panels, expected_episodes=len(instances), previous=previous)
        rundir.write_json_atomic(out / rundir.MANIFEST, manifest)

        progress = Progress(len(instances), rows, enabled=bool(config.get("progress", True)))
        pool = EnvPool()
        agent = build_agent(agent_name, agent_config) if todo else None
        try:
            with rundir.EpisodeLog(out / rundir.EPISODES) as log:

                def record(trajectory: Any) -> None:
                    data = trajectory.to_dict()
                    log.append(data)
                    row = metrics.episode_row(data)
                    rows.append(row)
                    progress.add(row)

                for batch in batches(todo, int(config["batch_size"])):
                    envs = pool.take([instance.env_id for instance in batch])
                    episodes = [
                        ChatEpisode(env, chat_config, env_id=i.env_id, seed=i.seed, sample=i.sample, split=i.split)
                        for env, i in zip(envs, batch)
                    ]
                    run_lockstep(episodes, agent, on_finished=record)
                    log.sync()
                    progress.refresh()
        finally:
            progress.close()
            pool.close()
            if agent is not None:
                agent.close()

        summary = write_summary(out, rows, fingerprint_)
        complete = {rundir.episode_key(row) for row in rows} >= {i.key for i in instances}
        # Again at the end: a model agent may have imported torch, revealing GPUs.
        manifest.update(finished_at=_utc_now(), complete=complete, hardware=hardware())
        rundir.write_json_atomic(out / rundir.MANIFEST, manifest)
    return EvalResult(out=out, summary=summary, new_episodes=len(todo), complete=complete)


def _read_manifest(out: Path) -> dict[str, Any] | None:
    path = out / rundir.MANIFEST
    return rundir.read_json(path) if path.exists() else None


def _require_manifest(path: Path) -> dict[str, Any]:
    manifest = _read_manifest(path)
    if manifest is None:
        raise RunDirError(f"{path} has no {rundir.MANIFEST}; is it a run directory?")
    return manifest


def _fingerprint_of(manifest: Mapping[str, Any]) -> dict[str, Any]:
    return {key: manifest[key] for key in ("config", "panels", "template_hash")}


# ---------------------------------------------------------------- merging


def merge_runs(inputs: Sequence[Path], out: Path) -> dict[str, Any]:
    """Combine the run directories ``inputs`` (shards of one run) into ``out``.

    The inputs must hold the same run up to ``shard`` and must not share an episode.
    Returns the merged summary, which equals an unsharded run's.
    """
    if not inputs:
        raise ValueError("merge needs at least one input run directory")
    inputs = [Path(path) for path in inputs]
    manifests = [_require_manifest(path) for path in inputs]
    unsharded = [_unsharded(_fingerprint_of(manifest)) for manifest in manifests]
    for path, other in zip(inputs[1:], unsharded[1:]):
        rundir.check_same_config(path, unsharded[0], other)

    records: dict[EpisodeKey, dict[str, Any]] = {}
    origin: dict[EpisodeKey, Path] = {}
    for path in inputs:
        for record in rundir.read_episodes(path / rundir.EPISODES):
            key = rundir.episode_key(record)
            if key in records:
                raise RunDirError(f"episode {key} is in both {origin[key]} and {path}")
            records[key], origin[key] = record, path

    shards = {parse_shard(m["config"]["shard"]) for m in manifests}
    counts = {count for _, count in shards}
    covers_all = len(counts) == 1 and {index for index, _ in shards} == set(range(counts.pop()))
    with rundir.locked(out):
        if any((out / name).exists() for name in (rundir.MANIFEST, rundir.EPISODES)):
            raise RunDirError(f"{out} already holds a run; merge into a new directory")
        ordered = [records[key] for key in sorted(records)]
        rundir.write_episodes(out / rundir.EPISODES, ordered)
        summary = write_summary(out, [metrics.episode_row(r) for r in ordered], unsharded[0])
        manifest = dict(manifests[0])
        manifest.update(
            unsharded[0],
            merged_from=[{"path": str(p), "shard": m["config"]["shard"]} for p, m in zip(inputs, manifests)],
            expected_episodes=sum(m["expected_episodes"] for m in manifests),
            started_at=min(m["started_at"] for m in manifests),
            finished_at=_utc_now(),
            complete=covers_all and all(m["complete"] for m in manifests),
        )
        rundir.write_json_atomic(out / rundir.MANIFEST, manifest)
    return summary


def _unsharded(fingerprint_: Mapping[str, Any]) -> dict[str, Any]:
    config = dict(fingerprint_["config"], shard="0/1")
    return dict(fingerprint_, config=config)


def load_summary(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(manifest, summary)`` of a finished run directory."""
    run_dir = Path(run_dir)
    for name in (rundir.MANIFEST, rundir.SUMMARY):
        if not (run_dir / name).exists():
            raise RunDirError(f"{run_dir} has no {name}; run or resume it first")
    return rundir.read_json(run_dir / rundir.MANIFEST), rundir.read_json(run_dir / rundir.SUMMARY)


def agent_label(manifest: Mapping[str, Any]) -> str:
    """``name`` or ``name(model)``, for tables."""
    agent = manifest["config"]["agent"]
    return f"{agent['name']}({agent['model']})" if agent.get("model") else str(agent["name"])

