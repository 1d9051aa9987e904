"""Validation and the final test: the real eval harness on a checkpoint, into a normal eval run directory.

Each is ``ragen-bench eval env=... split=... agent=hf agent.model=CHECKPOINT`` with the trainer's chat
settings, so a validation number is exactly what an eval of that checkpoint reports.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragen_bench.train import checkpoint as ckpt
from ragen_bench.train import games
from ragen_bench.train.config import TrainConfig
from ragen_bench.train.logbook import Logbook, plot_curves
from ragen_bench.train.schedule import derived_seed, panel_seeds

if TYPE_CHECKING:
    from ragen_bench.eval.run import EvalResult


def validate(config: TrainConfig, out: Path, step: int, checkpoint: Path | None, log: Logbook,
             say: Callable[[str], None]) -> Path:
    """Evaluate ``checkpoint`` (None: the starting model) on ``val.split``; log it and redraw the curves."""
    c = config
    model = str(ckpt.model_dir(checkpoint)) if checkpoint else c.model
    run = evaluate(c, model, c.val.split, limit=c.val.limit, temperature=c.val.temperature, samples=c.val.samples,
                   out=out / "val" / f"step-{step:06d}")
    log.validation(step, c.val.split, run.summary, run.out, seeds=panel_seeds(c.val.limit))
    plot_curves(out)
    say(f"step {step}: {c.val.split} success {run.summary['groups'][0]['success_rate']:.3f} "
        f"({panel_seeds(c.val.limit)})")
    return run.out


def test(config: TrainConfig, out: Path, step: int, checkpoint: Path, log: Logbook,
         say: Callable[[str], None]) -> Path | None:
    """Evaluate the final ``checkpoint`` on ``test.split`` (None when there is no test split)."""
    c = config
    if c.test.split is None:
        return None
    run = evaluate(c, str(ckpt.model_dir(checkpoint)), c.test.split, limit=c.test.limit, temperature=c.val.temperature,
                   samples=c.val.samples, out=out / "test" / f"step-{step:06d}")
    log.validation(step, c.test.split, run.summary, run.out, seeds=panel_seeds(c.test.limit))
    say(f"final checkpoint: {c.test.split} success {run.summary['groups'][0]['success_rate']:.3f} "
        f"({panel_seeds(c.test.limit)}; {run.out})")
    return run.out


def evaluate(config: TrainConfig, model: str, split: str, *, limit: int | None, temperature: float, samples: int,
             out: Path) -> EvalResult:
    """``ragen-bench eval env=... split=... agent=hf agent.model=MODEL`` with the trainer's chat settings."""
    from ragen_bench.eval.compose import compose_config
    from ragen_bench.eval.run import run_eval

    # budget=none: the policy is measured under the chat settings it trains with, not the id's budget.
    # The sampling seed goes in as an override: the agent config copies it when composed, so setting
    # it afterwards would leave the agent sampling from seed 0.
    overrides = [f"env={config.env}", f"split={split}", "agent=hf", "budget=none",
                 f"sampling_seed={derived_seed(config.seed, 'eval')}"]
    eval_config = compose_config("eval", overrides)
    eval_config["agent"].update(model=model, temperature=temperature, max_new_tokens=config.rollout.max_new_tokens,
                                dtype=config.dtype)
    if "stop_strings" in eval_config["agent"]:
        eval_config["agent"]["stop_strings"] = list(config.rollout.stop_strings)
    eval_config.update(games.eval_keys(config))  # a game: its opponent and illegal-move rules
    eval_config.update(chat=dict(config.chat), limit=limit, samples=samples, out=str(out), progress=False)
    return run_eval(eval_config)
