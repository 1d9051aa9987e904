"""Running (or resuming) an evaluation into a run directory.

:func:`run_eval` loads the config (:func:`.config.load`: every check, everything it
implies), plans the episodes (:mod:`.plan`), reads what the run directory already holds
(each planned episode once; see :class:`~ragen_bench.eval.rundir.PlannedEpisodes`), and
drives the rest with :func:`ragen_bench.chat.run_lockstep` in groups of
``lockstep_episodes``: every live episode of a group advances one turn per batched agent call.  Each finished episode
is appended to ``episodes.jsonl`` at once (see :mod:`.rundir` for the durability
guarantee), so re-running the same command resumes the run, after a crash or Ctrl-C.
An agent that raises :class:`~ragen_bench.chat.protocol.AgentStopped` (a person quitting
``ragen-bench play``) ends the run early but cleanly: the summary of the finished
episodes is written and the manifest says ``complete: false``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium

from ragen_bench import panels as panels_module
from ragen_bench import runfiles
from ragen_bench.eval import games, metrics, provenance, report, rundir
from ragen_bench.eval.config import ConfigError, EvalConfig, load
from ragen_bench.eval.plan import Instance, batches, plan
from ragen_bench.eval.rundir import RunDirError

if TYPE_CHECKING:
    from ragen_bench.chat.protocol import Agent


@dataclass(frozen=True)
class EvalResult:
    out: Path
    summary: dict[str, Any]
    new_episodes: int
    complete: bool
    # Exact copies of earlier lines found in episodes.jsonl (counted once, reported).
    duplicate_lines: int = 0
    # Why the agent stopped the run early (AgentStopped's message); None when it was not.
    stopped: str | None = None


class EnvPool:
    """Reusable envs per id, so each lock-step group spares a ``gymnasium.make`` per episode.

    Groups run one after another and every episode resets its env with its own seed,
    so handing the same envs to the next group is safe.  ``env_kwargs`` go to every
    ``gymnasium.make``.
    """

    def __init__(self, env_kwargs: Mapping[str, Any]) -> None:
        self.env_kwargs = dict(env_kwargs)
        self._envs: dict[str, list[gymnasium.Env[Any, Any]]] = {}

    def _make(self, env_id: str) -> gymnasium.Env[Any, Any]:
        try:
            return gymnasium.make(env_id, **self.env_kwargs)
        # AttributeError: gymnasium.make itself calls str methods on render_mode=5.
        except (TypeError, ValueError, AttributeError) as error:
            # The env constructors check their arguments; a bad one is the user's to fix.
            raise ConfigError(f"env_kwargs {self.env_kwargs} for {env_id}: {error}") from None

    def take(self, env_ids: Sequence[str]) -> list[gymnasium.Env[Any, Any]]:
        """One distinct env for each entry of ``env_ids`` (an id may repeat)."""
        taken: dict[str, int] = {}
        envs = []
        for env_id in env_ids:
            index = taken[env_id] = taken.get(env_id, -1) + 1
            pool = self._envs.setdefault(env_id, [])
            if index == len(pool):
                pool.append(self._make(env_id))
            envs.append(pool[index])
        return envs

    def close(self) -> None:
        for envs in self._envs.values():
            for env in envs:
                env.close()
        self._envs.clear()


class Progress:
    """Progress bar (tqdm, on stderr): episodes done, success so far, tokens.

    With ``turns_per_episode`` it moves per turn, not per lock-step group (whose episodes all
    end together, minutes apart with a model agent): each turn played counts as that share of
    an episode until its episode ends, so the bar and its ETA advance as turns are played.
    """

    def __init__(self, total: int, done_rows: Sequence[metrics.Row], enabled: bool,
                 turns_per_episode: int | None = None):
        from tqdm import tqdm

        self.successes = sum(row["success"] for row in done_rows)
        self.episodes = len(done_rows)
        self.tokens = sum(row["tokens"] or 0 for row in done_rows)
        self.turn_share = 1 / turns_per_episode if turns_per_episode else 0.0
        self.live_share = 0.0  # the shares of the turns played by episodes still running
        self.shown = float(self.episodes)  # where the bar stands
        # disable=None: draw only on a terminal, so logs and CI stay clean.
        self.bar = tqdm(total=total, initial=self.episodes, unit="ep", disable=None if enabled else True,
                        bar_format="{l_bar}{bar}| {n:.1f}/{total_fmt} ep [{elapsed}<{remaining}{postfix}]")

    def turns(self, played: int) -> None:
        """``played`` episodes played a turn."""
        self.live_share += played * self.turn_share
        self._show()

    def add(self, row: metrics.Row) -> None:
        self.episodes += 1
        self.successes += row["success"]
        self.tokens += row["tokens"] or 0
        self.live_share = max(0.0, self.live_share - row["num_turns"] * self.turn_share)
        self._show()

    def _show(self) -> None:
        shown = min(self.episodes + self.live_share, self.bar.total)
        self.bar.update(shown - self.shown)
        self.shown = shown

    def refresh(self) -> None:
        rate = self.successes / self.episodes if self.episodes else 0.0
        self.bar.set_postfix(success=f"{rate:.3f}", tokens=self.tokens)

    def close(self) -> None:
        self.bar.close()


def build_agent(agent_config: Mapping[str, Any]) -> Agent:
    """The agent ``agent.name`` names (registered, or ``"module:factory"``), with the other settings."""
    from ragen_bench.agents import make_agent

    settings = dict(agent_config)
    return make_agent(settings.pop("name"), **settings)


def check_batch_limit(agent: Any, lockstep_episodes: int) -> None:
    """Refuse ``lockstep_episodes`` above the episodes ``agent`` plays at once (its optional class
    attribute ``episodes_at_once``; the ``human`` agent's is 1), before the run folder is written:
    refused mid-run, the folder would hold a manifest of this config, and the command the error
    suggests would then be refused as another run."""
    limit = getattr(agent, "episodes_at_once", None)  # None for no agent, too
    if limit is not None and lockstep_episodes > limit:
        from ragen_bench.chat.protocol import agent_name

        raise ConfigError(f"lockstep_episodes: agent {agent_name(agent)!r} plays {limit} episode(s) at a time, "
                          f"got {lockstep_episodes}; give lockstep_episodes={limit}")


def close_agent(agent: Any) -> None:
    """``agent.close()``; a failure names the agent (the episodes already written are kept)."""
    from ragen_bench.chat.protocol import AgentError, agent_name

    try:
        agent.close()
    except AgentError:
        raise
    except Exception as error:
        raise AgentError(
            f"agent {agent_name(agent)!r} failed in close(): {type(error).__name__}: {error}; "
            "finished episodes are kept, re-run the same command to finish the run"
        ) from error


def run_eval(
    config: Mapping[str, Any], *, on_record: Callable[[Mapping[str, Any]], None] | None = None
) -> EvalResult:
    """Run (or resume) the evaluation ``config`` describes; see the module docstring.

    ``on_record`` sees each new episode's record once it is in ``episodes.jsonl``
    (``ragen-bench play`` shows a person how the episode ended).
    """
    run = load(config)
    panels = [panels_module.load(env_id, split) for env_id, split in run.targets]
    instances = plan(panels, samples=run.samples, limit=run.limit, shard=run.shard, counts=run.counts)
    fingerprint_ = provenance.fingerprint(run, panels)
    planned = {instance.slot for instance in instances}
    pool = EnvPool(run.env_kwargs)
    try:
        # One env per id now: bad env arguments are refused before anything is written
        # (a game's were checked with the config).
        if run.game is None:
            pool.take(list(dict.fromkeys(env_id for env_id, _ in run.targets)))
        with rundir.locked(run.out):
            previous = _previous_manifest(run.out, fingerprint_)
            existing = rundir.PlannedEpisodes(run.out / rundir.EPISODES, planned, repair=True)
            # Only the small per-episode rows stay in memory, never the transcripts.
            rows = [report.row_of(existing.path, number, record) for number, record in existing]
            done = {rundir.slot_of(row) for row in rows}
            todo = [instance for instance in instances if instance.slot not in done]
            # Built before the manifest is written: bad agent settings leave no run behind.
            agent, rival = _players(run) if todo else (None, None)
            manifest = provenance.build_manifest(
                fingerprint_, panels, expected_episodes=len(instances), previous=previous, counts=run.counts
            )
            runfiles.write_json_atomic(run.out / rundir.MANIFEST, manifest)
            # A game's bar moves per game; an episode's at most its id's turns.
            turns = None if run.game is not None else max(run.chat_for(env_id).max_turns for env_id, _ in run.targets)
            progress = Progress(len(instances), rows, enabled=run.progress, turns_per_episode=turns)
            stopped = _play_all(run, todo, agent, rival, pool, rows, progress, on_record)
            summary = report.write_summary(run.out, rows, fingerprint_)
            if run.game is not None:
                summary["games"] = games.add_game_summary(run.out)
            complete = {rundir.slot_of(row) for row in rows} >= planned
            # Again at the end: a model agent may have imported torch, revealing GPUs.
            manifest.update(finished_at=provenance.utc_now(), complete=complete, hardware=provenance.hardware())
            runfiles.write_json_atomic(run.out / rundir.MANIFEST, manifest)
    finally:
        pool.close()
    return EvalResult(out=run.out, summary=summary, new_episodes=len(rows) - len(done), complete=complete,
                      duplicate_lines=existing.duplicates, stopped=stopped)


def _previous_manifest(out: Path, fingerprint_: Mapping[str, Any]) -> dict[str, Any] | None:
    """The manifest of the run ``out`` already holds (``None`` for a new run), refused unless it is this run.

    A folder with episodes but no manifest, or with files that are no run's, is refused too.
    """
    previous = provenance.read_manifest(out)
    if previous is not None:
        runfiles.require_same_config(out, provenance.fingerprint_of(previous), fingerprint_, error=RunDirError)
    elif (out / rundir.EPISODES).exists():
        raise RunDirError(f"{out} has episodes but no {rundir.MANIFEST}: cannot tell which run they belong to")
    elif foreign := sorted(p.name for p in out.iterdir() if p.name != rundir.LOCK):
        # out=. or out=src (a typo) would scatter run files among the user's own.
        raise RunDirError(
            f"{out} holds files that are not a run ({', '.join(foreign[:3])}"
            f"{', ...' if len(foreign) > 3 else ''}); "
            "out= must name a new or empty directory, or a run directory"
        )
    return previous


def _players(run: EvalConfig) -> tuple[Agent, Agent | None]:
    """The run's agent and, when an agent config plays the opponent, that opponent (it plays through
    the chat layer like the agent); each checked against ``lockstep_episodes`` and, in tools mode, for
    acting by tool calls, before the run folder is written."""
    from ragen_bench.chat.protocol import require_acts_by_tools

    agent = build_agent(run.agent)
    rival = None if run.opponent_agent is None else build_agent(run.opponent_agent)
    for player in (agent, rival):
        check_batch_limit(player, run.lockstep_episodes)
    if run.chat.tools:
        require_acts_by_tools(agent)
    return agent, rival


def _play_all(
    run: EvalConfig,
    todo: Sequence[Instance],
    agent: Any,
    rival: Any,
    pool: EnvPool,
    rows: list[metrics.Row],
    progress: Progress,
    on_record: Callable[[Mapping[str, Any]], None] | None,
) -> str | None:
    """Play ``todo`` (episodes, or games against ``rival``), then close the progress bar and the players.

    Returns why the agent stopped the run early (:class:`~ragen_bench.chat.protocol.AgentStopped`'s
    message), or ``None`` when it did not; the episodes in flight then are dropped, the finished
    ones are in the log and in ``rows``.
    """
    from ragen_bench.chat.protocol import AgentStopped

    try:
        if run.game is None:
            _play(run, todo, agent, pool, rows, progress, on_record)
        else:
            games.play_games(run, todo, agent, rival, rows, progress, on_record)
    except AgentStopped as stop:
        return str(stop) or "stopped by the agent"
    finally:
        progress.close()
        for player in (agent, rival):
            if player is not None:
                close_agent(player)
    return None


def _play(
    run: EvalConfig,
    todo: Sequence[Instance],
    agent: Any,
    pool: EnvPool,
    rows: list[metrics.Row],
    progress: Progress,
    on_record: Callable[[Mapping[str, Any]], None] | None,
) -> None:
    """Play ``todo`` in lock-step groups, appending each finished episode to the log and ``rows``."""
    from ragen_bench.chat import ChatEpisode, run_lockstep

    with rundir.EpisodeLog(run.out / rundir.EPISODES) as log:

        def record(trajectory: Any) -> None:
            data = trajectory.to_dict()
            log.append(data)
            row = metrics.episode_row(data)
            rows.append(row)
            progress.add(row)
            if on_record is not None:
                on_record(data)

        for group in batches(todo, run.lockstep_episodes):
            envs = pool.take([instance.env_id for instance in group])
            episodes = [
                ChatEpisode(env, run.chat_for(i.env_id), env_id=i.env_id, seed=i.seed, sample=i.sample, split=i.split)
                for env, i in zip(envs, group)
            ]
            run_lockstep(episodes, agent, on_finished=record, on_turn=progress.turns)
            log.sync()
            progress.refresh()
