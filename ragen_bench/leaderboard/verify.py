"""``ragen-bench leaderboard verify``: check every number of a submission by replaying it.

Our envs are deterministic given their seed (slippery FrozenLake too: its randomness
is seeded by ``reset``), so an episode record can be checked completely: the env is
reset with the recorded seed, every recorded ``raw_response`` is fed through the chat
layer under the recorded chat settings -- exactly the code path of ``ragen-bench
eval`` -- and the record the replay produces must equal the submitted one, field by
field and turn by turn.  The summary is then recomputed from the replayed episodes
with :mod:`ragen_bench.eval.metrics`.  The one thing replay cannot reproduce is token
counts; implausible ones are refused (:mod:`.tokens`).  A multi-agent game's records are
replayed seat by seat, the opponent choosing again (:mod:`.verify_games`).  An id whose extra lives
in a virtualenv of its own (NetHack's) is replayed by the same rule in that venv's python (:mod:`.own_venv`).

Checks run in a fixed order and the first failure is raised as a
:class:`~ragen_bench.leaderboard.errors.LeaderboardError` naming the file, line,
episode key, turn and field, with the expected and the found value.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragen_bench import runfiles
from ragen_bench.leaderboard import files
from ragen_bench.leaderboard.errors import LeaderboardError, as_leaderboard_error
from ragen_bench.leaderboard.lineage import SUBMISSION, TrainingLog, check_base_entry, read_training_log
from ragen_bench.leaderboard.schema import SubmissionInfo, parse_submission

# Most episodes one submission may plan (every panel of every env 4 times over fits).
MAX_EPISODES = 1_000_000


@dataclass(frozen=True)
class StreamRun:
    """One of an entry's ``stream_runs``, replayed: the same model and episodes sampled from another stream."""

    run_dir: Path
    name: str  # streams.stream_name: "T=0.5 seed 961660578", "greedy"
    manifest: dict[str, Any]
    rows: list[dict[str, Any]]


@dataclass(frozen=True)
class VerifiedRun:
    """A submission that passed every check, with what the leaderboard needs of it."""

    path: Path
    run_dir: Path
    episodes_path: Path
    info: SubmissionInfo
    manifest: dict[str, Any]
    summary: dict[str, Any]
    rows: list[dict[str, Any]]
    turns: int
    seconds: float
    training: TrainingLog | None = None
    streams: tuple[StreamRun, ...] = ()
    # A game run's replayed games in log order, beside ``rows`` (what the games summary and the ladder read).
    games: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    @property
    def episodes_per_second(self) -> float:
        return len(self.rows) / self.seconds if self.seconds > 0 else float("inf")


@dataclass(frozen=True)
class _RunSpec:
    """What the manifest fixes for replay: chat settings and the planned episodes in order."""

    run: Any  # the recorded config, checked (ragen_bench.eval.config.EvalConfig): each id's chat settings
    plan: list[tuple[str, str, int, int]]
    panels: dict[str, str]


def verify(path: str | Path) -> VerifiedRun:
    """Verify the submission folder ``path``; raises :class:`LeaderboardError` on the first failure."""
    started = time.perf_counter()
    root = Path(path)
    if root.is_symlink():
        raise LeaderboardError("is a symbolic link; a submission is a plain folder", file=str(root))
    if not root.is_dir():
        raise LeaderboardError("not a submission folder (a directory is expected)", file=str(root))
    info = parse_submission(files.read_json_file(root / SUBMISSION, name=SUBMISSION), name=str(root / SUBMISSION))
    # abspath, not resolve: `verify .` names the current folder, and no link is followed.
    folder_name = Path(os.path.abspath(root)).name
    if info.name != folder_name:
        raise LeaderboardError("the folder name must equal the submission's name", file=str(root / SUBMISSION),
                               field="name", expected=folder_name, found=info.name)
    run_dir = files.inside(root, info.run_dir, what=f"{root / SUBMISSION}: run_dir")
    if not run_dir.is_dir():
        raise LeaderboardError(f"run_dir {info.run_dir!r} is not a folder", file=str(root / SUBMISSION))
    check_base_entry(root, info)
    training = read_training_log(root, info)
    manifest, summary, episodes_path, rows, turns, games = _verify_run_dir(run_dir)
    streams = tuple(_stream_run(root, relative, manifest, rows) for relative in info.stream_runs)
    _check_distinct_streams(root, manifest, streams)
    return VerifiedRun(
        path=root, run_dir=run_dir, episodes_path=episodes_path, info=info, manifest=manifest, summary=summary,
        rows=rows, turns=turns, seconds=time.perf_counter() - started, training=training, streams=streams,
        games=games,
    )


def _verify_run_dir(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any], Path, list[dict[str, Any]], int,
                                           list[dict[str, Any]]]:
    """Replay one eval run directory: its manifest, summary, episode log, replayed rows, turn count and games."""
    manifest_path = run_dir / "manifest.json"
    manifest = files.read_json_file(manifest_path, name="manifest.json")
    spec = check_manifest(manifest, name=str(manifest_path))
    summary_path = run_dir / "summary.json"
    summary = files.read_json_file(summary_path, name="summary.json")
    episodes_path = files.find_episodes(run_dir)
    rows, turns, games = _replay_log(episodes_path, spec)
    check_summary(summary, expected_summary(spec, rows, games), name=str(summary_path))
    return manifest, summary, episodes_path, rows, turns, games


def _stream_run(root: Path, relative: str, manifest: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> StreamRun:
    """One of ``stream_runs``, replayed like ``run_dir``: the same config but for the stream, the same episodes."""
    from ragen_bench.leaderboard.streams import stream_name, without_keys

    where = f"{root / SUBMISSION}: stream_runs"
    run_dir = files.inside(root, relative, what=where)
    if not run_dir.is_dir():
        raise LeaderboardError(f"stream run {relative!r} is not a folder", file=str(root / SUBMISSION))
    stream_manifest, _, _, stream_rows, _, _ = _verify_run_dir(run_dir)

    found = runfiles.difference(without_keys(manifest["config"]), without_keys(stream_manifest["config"]))
    if found is not None:
        raise LeaderboardError(f"stream run {relative!r} may differ from run_dir only in the stream", file=where,
                               field=found[0], expected=found[1], found=found[2])

    def slots(these: Sequence[Mapping[str, Any]]) -> set[tuple[Any, ...]]:
        return {(row["env_id"], row["split"], row["seed"], row["sample"]) for row in these}

    if slots(stream_rows) != slots(rows):
        raise LeaderboardError(f"stream run {relative!r} holds other episodes than run_dir", file=where)
    return StreamRun(run_dir=run_dir, name=stream_name(stream_manifest["config"]), manifest=stream_manifest,
                     rows=stream_rows)


def _check_distinct_streams(root: Path, manifest: Mapping[str, Any], streams: Sequence[StreamRun]) -> None:
    """Each stream once: a stream run repeating another's stream would count its episodes twice in the pooling."""
    from ragen_bench.leaderboard.streams import stream_name

    seen = [stream_name(manifest["config"])]
    for stream in streams:
        if stream.name in seen:
            raise LeaderboardError(f"stream {stream.name} appears twice (run_dir and stream_runs)",
                                   file=str(root / SUBMISSION), field="stream_runs")
        seen.append(stream.name)


# -- manifest ------------------------------------------------------------------------

def check_manifest(manifest: Any, *, name: str) -> _RunSpec:
    """The run a manifest describes, checked against today's registry, panels and templates."""
    from ragen_bench import panels as panels_module
    from ragen_bench.eval.config import ConfigError, load
    from ragen_bench.eval.plan import panel_cut, plan
    from ragen_bench.eval.provenance import FORMAT, MANIFEST_FIELDS, bad_manifest_field, env_entries
    from ragen_bench.leaderboard.verify_games import check_seats

    if not isinstance(manifest, dict):
        raise LeaderboardError("not a run manifest (a JSON object is expected)", file=name)
    if (field := bad_manifest_field(manifest)) is not None:
        raise LeaderboardError(f"missing or not a {MANIFEST_FIELDS[field].__name__}", file=name, field=field)
    if manifest["format"] != FORMAT:
        raise LeaderboardError("unknown run format", file=name, field="format",
                               expected=FORMAT, found=manifest["format"])
    config = manifest["config"]
    if config.get("env_kwargs") or manifest["data_files"]:
        raise LeaderboardError("leaderboard runs use the envs' own data; env_kwargs must be empty",
                               file=name, field="config.env_kwargs", expected={}, found=config.get("env_kwargs"))
    try:
        # out/progress are not recorded (they do not change results); load wants them.
        run = load({**config, "out": None, "progress": False})
    except (ConfigError, TypeError, ValueError) as error:
        raise LeaderboardError(f"not a valid eval config: {error}", file=name, field="config") from None
    for env_id, split in run.targets:
        if split != "test":
            # The tables show no split: a train or val number would pass for a test one.
            raise LeaderboardError(f"leaderboard entries are measured on test panels; {env_id} was run on {split!r}",
                                   file=name, field="config.split", expected="test", found=split)
    panels = [panels_module.load(env_id, split) for env_id, split in run.targets]
    current = {f"{p.env_id}:{p.split}": p.checksum for p in panels}
    _require_equal(manifest["panels"], current, file=name, field="panels",
                   problem="panel checksums differ from the frozen panels")
    _require_equal(manifest["envs"], env_entries(panels, run.counts), file=name, field="envs",
                   problem="env ids, versions, panels or episode counts differ")
    _check_counts(run, name)
    if manifest["template_hash"] != run.template_hash:
        raise LeaderboardError("template hash is not the hash of the recorded chat config and today's templates",
                               file=name, field="template_hash",
                               expected=run.template_hash, found=manifest["template_hash"])
    # Counted before the plan is built: `samples` is unbounded in the config, memory is not.
    planned = run.samples * sum(len(p.seeds[: panel_cut(run.limit, run.counts.get((p.env_id, p.split)))])
                                for p in panels)
    if planned > MAX_EPISODES:
        raise LeaderboardError(f"the run plans {planned} episodes, over the limit of {MAX_EPISODES}",
                               file=name, field="config.samples")
    instances = plan(panels, samples=run.samples, limit=run.limit, shard=run.shard, counts=run.counts)
    if run.game is not None:
        check_seats([i.slot for i in instances], name=name)
    if config.get("shard") != "0/1":
        raise LeaderboardError("a submission is a whole run; merge the shards first (ragen-bench merge)",
                               file=name, field="config.shard", expected="0/1", found=config.get("shard"))
    if manifest["expected_episodes"] != planned:
        raise LeaderboardError("does not match the plan", file=name, field="expected_episodes",
                               expected=planned, found=manifest["expected_episodes"])
    if manifest["complete"] is not True:
        raise LeaderboardError("the run is incomplete; finish it (re-run the same eval command)",
                               file=name, field="complete", expected=True, found=False)
    return _RunSpec(run, [i.slot for i in instances], current)


def _check_counts(run: Any, name: str) -> None:
    """A run of a suite with episode counts holds every counted episode (an entry holds exactly those): no limit below."""
    for (env_id, _), count in sorted(run.counts.items()):
        if run.limit is not None and run.limit < count:
            raise LeaderboardError(f"suite {run.mapping['suite']} plays {count} episodes of {env_id}; limit={run.limit} "
                                   "cuts them short", file=name, field="config.limit", expected=None, found=run.limit)


def _require_equal(found: Any, expected: Any, *, problem: str, **where: Any) -> None:
    difference = runfiles.difference(expected, found, where["field"], strict=True)
    if difference is not None:
        where["field"], expected_value, found_value = difference
        raise LeaderboardError(problem, expected=expected_value, found=found_value, **where)


# -- episodes ------------------------------------------------------------------------


def _replay_log(path: Path, spec: _RunSpec) -> tuple[list[dict[str, Any]], int, list[dict[str, Any]]]:
    """Replay every record of the log; the rows of the summary, the number of turns and, for a game, what
    its ``games`` summary reads of each record (:mod:`.verify_games`)."""
    from ragen_bench.eval import metrics
    from ragen_bench.eval.run import EnvPool
    from ragen_bench.leaderboard.own_venv import raise_verdict, replay_checked
    from ragen_bench.leaderboard.verify_games import replay_game_record

    planned = set(spec.plan)
    verdicts = _verdicts_elsewhere(path, spec)
    seen: dict[tuple[str, str, int, int], int] = {}
    rows = []
    games: list[dict[str, Any]] = []
    turns = 0
    pool = EnvPool({})
    try:
        for number, record in files.episode_lines(path):
            where = {"file": str(path), "line": number}
            slot = _slot(record, where)
            if slot not in planned:
                raise LeaderboardError("episode is not in the run's plan (a foreign panel, seed or sample)",
                                       episode=_key(slot), **where)
            if slot in seen:
                raise LeaderboardError(f"episode appears twice (first on line {seen[slot]})",
                                       episode=_key(slot), **where)
            seen[slot] = number
            try:
                if spec.run.game is not None:
                    games.append(replay_game_record(record, spec.run, {**where, "episode": _key(slot)}))
                    replayed = record
                elif number in verdicts:  # replayed by the rule below in the venv of the id's extra
                    raise_verdict(verdicts[number])
                    replayed = record
                else:
                    replayed = replay_checked(record, pool.take([slot[0]])[0], spec.run.chat_for(slot[0]),
                                              where={**where, "episode": _key(slot)})
            except RecursionError:
                # Values nested just under the parser's limit can still exhaust the stack when compared.
                raise LeaderboardError("a value is nested too deeply", episode=_key(slot), **where) from None
            rows.append(metrics.episode_row(replayed))
            turns += len(replayed["turns"])
    finally:
        pool.close()
    for slot in spec.plan:
        if slot not in seen:
            raise LeaderboardError(
                "episode is missing: every panel instance must appear exactly `samples` times",
                file=str(path), episode=_key(slot),
            )
    return rows, turns, games


def _verdicts_elsewhere(path: Path, spec: _RunSpec) -> dict[int, dict[str, Any] | None]:
    """``{line: verdict}`` of the records whose id's extra lives in a venv of its own and is missing here
    (:mod:`.own_venv`), replayed there in one worker per extra before the log is checked in order, so
    every other check still comes at its line."""
    from ragen_bench.leaderboard import own_venv

    away = own_venv.elsewhere(slot[0] for slot in spec.plan) if spec.run.game is None else {}
    if not away:
        return {}
    pythons = {extra: own_venv.interpreter(extra, [i for i, e in away.items() if e == extra])
               for extra in sorted(set(away.values()))}
    batches: dict[str, list[tuple[int, dict[str, Any], dict[str, Any]]]] = {extra: [] for extra in pythons}
    try:
        for number, record in files.episode_lines(path):
            where = {"file": str(path), "line": number}
            try:
                slot = _slot(record, where)
            except LeaderboardError:
                continue  # refused at its line below
            if slot[0] in away:
                batches[away[slot[0]]].append((number, {**where, "episode": _key(slot)}, record))
    except LeaderboardError:
        pass  # a line the log cannot be read past: refused below, after every check of the lines before it
    verdicts: dict[int, dict[str, Any] | None] = {}
    for extra, batch in batches.items():
        found = own_venv.replay_elsewhere(pythons[extra], spec.run.mapping, [(w, r) for _, w, r in batch])
        verdicts.update(zip([number for number, _, _ in batch], found))
    return verdicts


def _key(slot: tuple[str, str, int, int]) -> str:
    from ragen_bench.chat import episode_key

    return episode_key(*slot)


def _slot(record: Mapping[str, Any], where: Mapping[str, Any]) -> tuple[str, str, int, int]:
    from ragen_bench.eval.replay import record_slot

    with as_leaderboard_error():
        return record_slot(record, where)


# -- summary -------------------------------------------------------------------------


def expected_summary(spec: _RunSpec, rows: Sequence[Mapping[str, Any]],
                     games: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """What ``summary.json`` must hold for the replayed ``rows`` (and a game run's replayed ``games``),
    as ``ragen-bench eval`` writes it."""
    from ragen_bench.eval import metrics
    from ragen_bench.eval.games import summarize_games

    summary: dict[str, Any] = {
        "data_files": {},
        "groups": metrics.summarize(rows),
        "panels": spec.panels,
        "template_hash": spec.run.template_hash,
    }
    if spec.run.game is not None:
        summary["games"] = summarize_games(games)
    return json.loads(json.dumps(summary))


# Group fields summary.json gained after leaderboard entries were first committed, each with the test
# of a recomputed group saying they report nothing an older summary lacks: no reply without content;
# a progress equal to the success rate (no world score of its own, or one that is success).
LATER_GROUP_FIELDS: dict[tuple[str, ...], Callable[[Mapping[str, Any]], bool]] = {
    ("null_content_replies", "null_content_reply_rate"): lambda group: group["null_content_replies"] == 0,
    ("progress", "progress_ci95"): lambda group: (group["progress"], group["progress_ci95"])
    == (group["success_rate"], group["success_ci95"]),
}


def check_summary(found: Any, expected: Mapping[str, Any], *, name: str) -> None:
    """``found`` must equal ``expected``; a summary written before a field existed may lack it.

    A group may lack all of a later field group's keys (:data:`LATER_GROUP_FIELDS`) only
    while the replay finds nothing new for them to say: an older summary holding replies
    without content must be rewritten (re-run the eval command) to show them.
    """
    _require_equal(found, _as_written(found, expected), file=name, field="summary",
                   problem="differs from the summary recomputed from the replayed episodes")


def _as_written(found: Any, expected: Mapping[str, Any]) -> Mapping[str, Any]:
    """``expected`` without the later fields a group of ``found`` lacks and would report as zero."""
    found_groups = found.get("groups") if isinstance(found, dict) else None
    if not isinstance(found_groups, list):
        return expected
    groups = []
    for index, group in enumerate(expected["groups"]):
        older = found_groups[index] if index < len(found_groups) else None
        if isinstance(older, dict):
            for keys, says_nothing_new in LATER_GROUP_FIELDS.items():
                if says_nothing_new(group) and not any(key in older for key in keys):
                    group = {key: value for key, value in group.items() if key not in keys}
        groups.append(group)
    return {**expected, "groups": groups}
