"""``ragen-bench eval ... launcher=ray``: the shards of one run played by Ray actors, merged into ``out``.

The harness already knows how to play one shard of a run into its own run directory
(``shard=i/n``: resumable, locked, crash-safe) and how to merge shard directories into
a run whose ``summary.json`` equals an unsharded run's.  The Ray launcher adds only
the placement:

1. ``workers=N`` shards ``0/N .. N-1/N``, each played by :func:`~ragen_bench.eval.run_eval`
   inside one Ray actor into ``<out>.shards/<i>-of-<N>/``.  The actor's process builds
   the agent once for its whole shard, so a model agent loads its model once per worker.
2. A worker killed mid-run (SIGKILL, OOM, a lost node) is restarted and its shard call
   retried (:data:`MAX_RETRIES` times); the retry *resumes* the shard directory, so the
   episodes it had written are kept and only the missing ones are played.
3. When every shard is complete, :func:`~ragen_bench.eval.merge_runs` writes ``out``;
   the shard folder is then removed.  Interrupted before that, the same command resumes
   the shards (with the same ``workers``).

Each actor asks Ray for one CPU and :func:`worker_gpus` GPUs (``ray.gpus_per_worker``; by
default one when the run's agent runs a model on a GPU, its ``device`` not ``cpu``, and the
cluster has GPUs), so a model agent's worker is granted a card and workers wait for one as
they wait for CPUs.  Ray shows a worker only the GPUs it was granted, numbered from 0.

Shard directories are written by the workers and read by this process, so on a
multi-node cluster ``out`` must be on a filesystem every node mounts at the same path
(the workers run in this process's working directory).  ``launcher``, ``workers`` and
``ray.address`` are not part of the run's identity.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import RayActorError, RayTaskError

from ragen_bench import panels as panels_module
from ragen_bench.eval import merge_runs, provenance, rundir, run_eval
from ragen_bench.eval.config import LAUNCH_DEFAULTS, ConfigError, EvalConfig, load
from ragen_bench.eval.plan import plan
from ragen_bench.eval.run import EvalResult
from ragen_bench.eval.rundir import RunDirError

# Restarts of a dead worker (and retries of its shard) before the run stops.
MAX_RETRIES = 3
SHARDS_SUFFIX = ".shards"
# A cluster this command starts holds only small configs and results in its object
# store; Ray's default (30% of RAM, in /dev/shm) would be taken for nothing.
LOCAL_OBJECT_STORE_BYTES = 256 * 1024**2
# How long a stopped run waits for its killed workers to be gone.
STOP_TIMEOUT_S = 60
# Agents that run a model in the worker's own process: on a cluster with GPUs each of their
# workers asks for one (Ray hides the GPUs from an actor that asks for none).  Scripted agents
# and ``openai`` (a remote server does the work) ask for none.
MODEL_AGENTS = ("hf", "vllm")


class WorkerLostError(RunDirError):
    """A worker died more often than :data:`MAX_RETRIES`; its shard keeps what it finished."""


def shards_dir(out: Path) -> Path:
    """Where the shards of ``out`` are played: a sibling folder, ``<out>.shards``."""
    out = Path(os.path.abspath(out))
    return out.with_name(out.name + SHARDS_SUFFIX)


def shard_config(config: Mapping[str, Any], directory: Path, index: int, count: int) -> dict[str, Any]:
    """The single-process config of shard ``index/count``, played into ``directory``."""
    return {
        **config, **LAUNCH_DEFAULTS,
        "shard": f"{index}/{count}", "out": str(directory), "progress": False,
    }


@ray.remote(num_cpus=1, max_restarts=MAX_RETRIES, max_task_retries=MAX_RETRIES)
class ShardWorker:
    """A Ray worker playing one shard with the harness's own :func:`run_eval`."""

    def play(self, config: Mapping[str, Any], cwd: str) -> int:
        """Play (or resume) the shard ``config`` names; returns the duplicate lines its log held.

        Relative paths in ``config`` (``out``, a model directory, data files) resolve from ``cwd``.
        """
        try:
            os.chdir(cwd)
        except OSError:
            raise RunDirError(
                f"a Ray worker on {ray.util.get_node_ip_address()} cannot enter {cwd}; launcher=ray needs the "
                "working directory and out= on a filesystem every node mounts at the same path"
            ) from None
        return run_eval(config).duplicate_lines


def _gpu_agents(config: EvalConfig) -> list[tuple[str, str]]:
    """``(config key, device)`` of each model agent the run builds off the CPU: its agent, and its
    opponent when that is an agent config (``device`` defaults to auto; the ``vllm`` agent has none)."""
    built = [("agent", config.agent)]
    if config.opponent_agent is not None:
        built.append(("opponent", config.opponent_agent))
    return [(key, str(agent.get("device", "auto"))) for key, agent in built
            if agent["name"] in MODEL_AGENTS and agent.get("device", "auto") != "cpu"]


def worker_gpus(config: EvalConfig, cluster_gpus: float) -> float:
    """GPUs each shard's actor asks Ray for: ``ray.gpus_per_worker``, else 1 for a model agent on a GPU
    (device auto or cuda) on a GPU cluster, else 0.

    A request no node of the cluster could grant would leave the workers waiting forever, and an
    agent set to a CUDA device its worker will not see fails in every worker: both refused.
    """
    asked = config.gpus_per_worker
    if asked is not None and asked > cluster_gpus:
        raise ConfigError(
            f"ray.gpus_per_worker={asked}: the Ray cluster has {cluster_gpus:g} GPUs; "
            "give a number it can grant (0 plays on CPUs)"
        )
    on_gpu = _gpu_agents(config)
    gpus = float(asked) if asked is not None else 1.0 if cluster_gpus >= 1 and on_gpu else 0.0
    for key, device in on_gpu:
        if device == "auto":
            continue
        index = int(device.partition(":")[2] or 0)
        if index >= gpus:
            raise ConfigError(
                f"{key}.device={device}: a Ray worker sees only the {gpus:g} GPUs it is granted, numbered "
                "from 0 (ray.gpus_per_worker); use auto or cuda, or cpu"
            )
    return gpus


def shard_count(shards: Path, workers: int) -> int:
    """``workers``, unless ``shards`` holds an unfinished run split another way (refused)."""
    counts = {path.name.split("-of-")[-1] for path in shards.glob("*-of-*")} if shards.is_dir() else set()
    if counts - {str(workers)}:
        raise ConfigError(
            f"workers: {shards} holds the unfinished shards of workers={', '.join(sorted(counts))}; "
            "re-run with that value to finish them, or remove the folder"
        )
    return workers


@contextmanager
def cluster(address: str | None, workers: int) -> Iterator[None]:
    """Connected to Ray: an already initialised session, the cluster at ``address``, or a new local one."""
    if ray.is_initialized():
        yield
        return
    if address is None:
        ray.init(num_cpus=workers, include_dashboard=False, object_store_memory=LOCAL_OBJECT_STORE_BYTES)
    else:
        try:
            ray.init(address=address)
        except ConnectionError as error:  # no cluster there
            raise ConfigError(f"ray.address={address}: {error}") from None
    try:
        yield
    finally:
        ray.shutdown()


def _play_shards(config: EvalConfig, directories: list[Path]) -> int:
    """Play every shard on its own worker; returns the duplicate lines the shards ignored.

    The first failure (or Ctrl-C) stops every worker; the shards keep their finished episodes.
    """
    count = len(directories)
    gpus = worker_gpus(config, ray.cluster_resources().get("GPU", 0.0))
    workers = [ShardWorker.options(num_gpus=gpus).remote() for _ in directories]  # type: ignore[attr-defined]
    calls = {
        worker.play.remote(shard_config(config.mapping, directory, index, count), os.getcwd()): (worker, directory)
        for index, (worker, directory) in enumerate(zip(workers, directories))
    }
    duplicates = 0
    pending = list(calls)
    try:
        while pending:
            [done], pending = ray.wait(pending, num_returns=1)
            worker, directory = calls[done]
            duplicates += _shard_result(done, directory)
            # Its CPU goes to a shard still waiting for one (more workers than free CPUs).
            ray.kill(worker)
    finally:
        for worker in workers:
            ray.kill(worker)
        if pending:
            # Stopped early: once no worker can still write, drop the shard folders that hold no run.
            ray.wait(pending, num_returns=len(pending), timeout=STOP_TIMEOUT_S)
            for directory in directories:
                if directory.is_dir() and {path.name for path in directory.iterdir()} <= {rundir.LOCK}:
                    shutil.rmtree(directory)
    return duplicates


def _shard_result(call: Any, directory: Path) -> int:
    """What a finished shard call returned; its failure as the error it raised, or as a lost worker."""
    try:
        return int(ray.get(call))
    except RayTaskError as error:
        # Usage errors (bad agent settings, a different run in a shard) keep their one line.
        raise error.cause from None
    except RayActorError as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise WorkerLostError(
            f"the Ray worker playing {directory} was lost after {MAX_RETRIES} restarts ({reason}); "
            "its finished episodes are kept, re-run the same command to resume"
        ) from None


def _finished_run(config: EvalConfig, manifest: Mapping[str, Any]) -> EvalResult:
    """``config.out`` already holds a run: a finished one is re-checked in this process (nothing to play)."""
    if not manifest["complete"]:
        raise RunDirError(
            f"{config.out} holds an unfinished run played without launcher=ray; resume it with launcher=local, "
            "or give another out="
        )
    return run_eval({**config.mapping, **LAUNCH_DEFAULTS})


def _episodes_in(directories: list[Path], config: EvalConfig) -> int:
    """Episodes the shard directories already hold (from an interrupted earlier command)."""
    panels = [panels_module.load(env_id, split) for env_id, split in config.targets]
    planned = {i.slot for i in plan(panels, samples=config.samples, limit=config.limit, shard=(0, 1))}
    total = 0
    for directory in directories:
        if (directory / rundir.EPISODES).exists():
            with rundir.locked(directory):
                total += sum(1 for _ in rundir.PlannedEpisodes(directory / rundir.EPISODES, planned, repair=True))
    return total


def run_eval_on_ray(config: Mapping[str, Any]) -> EvalResult:
    """Run (or resume) the evaluation ``config`` describes on Ray; see the module docstring."""
    run = load(config)
    out = run.out
    manifest = provenance.read_manifest(out)
    if manifest is not None:
        return _finished_run(run, manifest)
    if out.exists() and (not out.is_dir() or any(path.name != rundir.LOCK for path in out.iterdir())):
        # merge_runs writes only into a new or empty directory; say so before any work is done.
        raise RunDirError(f"{out} holds files that are not a run; out= must name a new or empty directory, or a run")
    shards = shards_dir(out)
    with rundir.locked(shards):  # one driver per run
        count = shard_count(shards, run.workers)
        directories = [shards / f"{index}-of-{count}" for index in range(count)]
        earlier = _episodes_in(directories, run)
        with cluster(run.ray_address, count):
            duplicates = _play_shards(run, directories)
        summary = merge_runs(directories, out)
    shutil.rmtree(shards)
    episodes = sum(group["episodes"] for group in summary["groups"])
    complete = provenance.require_manifest(out)["complete"]
    return EvalResult(out=out, summary=summary, new_episodes=episodes - earlier, complete=complete,
                      duplicate_lines=duplicates)
