"""``ragen-bench play ENV_ID``: a person plays an env or a game in the terminal, recorded as an eval run.

The session *is* an evaluation: :func:`play` composes the eval config
``env=ENV_ID split=... agent=human lockstep_episodes=1`` (the ``human`` agent, :mod:`ragen_bench.agents.human`,
asks the person each turn) and runs it with :func:`ragen_bench.eval.run_eval`.  So the
run directory is an ordinary one (manifest, ``episodes.jsonl``, summary) that ``compare``,
``leaderboard verify`` and ``render`` read unchanged, each finished episode is appended
the moment it ends, and running the same command again resumes with the next seed.

Which episodes: the split's panel seeds in order, one episode each (``limit``: only the
first ``limit`` seeds), the person choosing after each episode to go on or quit; or one
seed with ``seed`` (it must be a seed of the panel: the plan is the panel's first
``i + 1`` seeds, shard ``i/(i+1)``, which is that seed alone, so the same config given to
``ragen-bench eval`` plans the same episode).  A game is played against ``opponent`` (a
scripted player of the game; ``None``: the game's default), the seat set by the seed.

Quitting (``q``, Ctrl-C, a closed terminal, the end of input) drops only the episode in
flight; the summary of the finished ones is written and the run stays ``complete:
false`` until its plan is played.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragen_bench import panels as panels_module
from ragen_bench.eval import compose_config, run_eval
from ragen_bench.eval.config import ConfigError, default_out
from ragen_bench.eval.run import EvalResult


def play_config(
    env_id: str, *, seed: int | None = None, split: str = "test", opponent: str | None = None,
    limit: int | None = None, out: str | None = None,
) -> dict[str, Any]:
    """The eval config of a play session (see the module docstring); bad arguments raise :class:`ConfigError`."""
    if seed is not None and limit is not None:
        raise ConfigError("--seed plays one seed; --limit cannot be given with it")
    config = compose_config("eval", ["agent=human", f"split={split}"])
    # One episode at a time: a person finishes an episode before the next one starts.
    config.update(env=env_id, progress=False, limit=limit, lockstep_episodes=1)
    if opponent is not None:
        config["opponent"] = opponent
    if seed is not None:
        seeds = panels_module.load(env_id, split).seeds
        if seed not in seeds:
            raise ConfigError(
                f"--seed {seed} is not a seed of the {split} panel of {env_id} "
                f"(its {len(seeds)} seeds run {seeds[0]}, {seeds[1] if len(seeds) > 1 else ''}...)"
            )
        index = seeds.index(seed)
        config.update(limit=index + 1, shard=f"{index}/{index + 1}")
    config["out"] = out or str(default_out(config)) + ("" if seed is None else f"-seed{seed}")
    return config


def play(env_id: str, *, screen: Any, **options: Any) -> EvalResult:
    """Play the session ``options`` describe (:func:`play_config`'s keywords); ``screen`` shows each episode's end."""
    config = play_config(env_id, **options)
    return run_eval(config, on_record=lambda record: show_end(screen, record))


def show_end(screen: Any, record: Mapping[str, Any]) -> None:
    """How a finished episode ended: the last message (its reward and final state), the outcome."""
    game = record.get("game")
    outcome = game["outcome"] if isinstance(game, Mapping) else ("success" if record["success"] else "no success")
    key = f"{record['env_id']}/{record['split']}/{record['seed']}/{record['sample']}"
    screen.panel(f"{key} · finished", record["messages"][-1]["content"])
    screen.line(
        f"episode over: {outcome} · total reward {record['total_reward']:.3g} · "
        f"{record['num_turns']} turn(s), {record['num_actions']} action(s) · recorded"
    )


def resume_hint(out: Path, result: EvalResult) -> str:
    """The last line of a session: where the run is and whether it is complete."""
    if result.complete:
        return f"{result.new_episodes} episode(s) played; run complete: {out}"
    why = f"stopped: {result.stopped}; " if result.stopped else ""
    return (f"{why}{result.new_episodes} episode(s) played, finished episodes are kept; "
            f"run incomplete (the same command resumes it): {out}")
