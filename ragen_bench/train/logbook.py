"""What a training run leaves to read: ``metrics.jsonl``, ``validation.jsonl``, TensorBoard, curves.

One JSON object per line and step; each line is flushed and fsynced as it is written, and a
resumed run first drops the lines of the steps after its checkpoint, which it redoes (they belonged to work
after the checkpoint it resumes from), so the file always describes one uninterrupted run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragen_bench.plots import AS_WRITTEN, legend_label
from ragen_bench.runfiles import replace_atomically

if TYPE_CHECKING:
    # Types only: matplotlib is imported when curves are drawn.
    from types import ModuleType

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

METRICS = "metrics.jsonl"
VALIDATION = "validation.jsonl"
CURVES = "curves.png"


def read_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def keep_through(path: Path, step: int) -> None:
    """Keep only the lines of steps up to ``step`` (none for step 0; atomic rewrite)."""
    if not path.exists():
        return
    kept = [row for row in read_lines(path) if 0 < row["step"] <= step]
    replace_atomically(path, lambda handle: handle.write("".join(json.dumps(row) + "\n" for row in kept).encode()))


def append_line(path: Path, row: Mapping[str, Any]) -> None:
    with path.open("a") as handle:
        handle.write(json.dumps(dict(row), allow_nan=False) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


class Logbook:
    """Per-step metrics to ``metrics.jsonl`` (and TensorBoard when asked), validations to ``validation.jsonl``."""

    def __init__(self, out: Path, *, tensorboard: bool, resume_step: int) -> None:
        self.out = out
        # A checkpoint at step k holds the work of steps 1..k and its validations; later
        # lines belong to work that the resumed run redoes.
        keep_through(out / METRICS, resume_step)
        keep_through(out / VALIDATION, resume_step)
        self.writer = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as error:
                raise RuntimeError("log.tensorboard=true needs tensorboard: pip install 'ragen-bench[train]'") from error
            self.writer = SummaryWriter(log_dir=str(out / "tensorboard"), purge_step=resume_step + 1)

    def step(self, step: int, metrics: Mapping[str, float]) -> None:
        append_line(self.out / METRICS, {"step": step, **metrics})
        self._scalars("train", step, metrics)

    def validation(self, step: int, split: str, summary: Mapping[str, Any], run_dir: Path, seeds: str) -> None:
        """One evaluation's headline numbers; ``seeds`` says which of the panel's seeds it played."""
        row = {"step": step, "split": split, "seeds": seeds, "run_dir": str(run_dir), **_headline(summary)}
        append_line(self.out / VALIDATION, row)
        self._scalars(split, step, {k: v for k, v in row.items() if isinstance(v, (int, float)) and k != "step"})

    def _scalars(self, prefix: str, step: int, metrics: Mapping[str, float]) -> None:
        if self.writer is None:
            return
        for name, value in metrics.items():
            self.writer.add_scalar(f"{prefix}/{name}", value, step)
        self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def _headline(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The eval summary's overall numbers (its first group: the one env of a trainer's validation)."""
    group = summary["groups"][0]
    return {key: group[key] for key in ("episodes", "success_rate", "mean_reward", "success_ci95") if key in group}


def plot_curves(out: Path) -> Path:
    """``curves.png``: training success and reward, validation success, losses and the collapse diagnostics, per step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train = read_lines(out / METRICS)
    val = read_lines(out / VALIDATION)
    # Split names are free text (legend_label); a user's matplotlibrc must not turn TeX on under them.
    with plt.rc_context(AS_WRITTEN):
        figure = _draw_curves(plt, train, val)
        path = out / CURVES
        replace_atomically(path, lambda handle: figure.savefig(handle, dpi=90, format="png"))
    plt.close(figure)
    return path


def _draw_curves(plt: ModuleType, train: list[dict[str, Any]], val: list[dict[str, Any]]) -> Figure:
    """The figure of :func:`plot_curves` from the metrics and validation lines."""
    figure, axes = plt.subplots(1, 4, figsize=(17, 3.6))

    def curve(axis: Axes, key: str, label: str, style: str = "-") -> None:
        points = [(row["step"], row[key]) for row in train if key in row]
        if points:
            axis.plot([step for step, _ in points], [value for _, value in points], style, label=label)

    curve(axes[0], "rollout/success", "rollout success")
    for split in dict.fromkeys(row["split"] for row in val):
        points = [row for row in val if row["split"] == split]
        axes[0].plot([r["step"] for r in points], [r["success_rate"] for r in points], "o-",
                     label=legend_label(f"{split} success"))
    axes[0].set_ylim(-0.02, 1.02)
    axes[0].set_title("success")
    curve(axes[1], "rollout/reward_mean", "mean reward")
    curve(axes[1], "filter/in_group_std", "in-group std")
    curve(axes[1], "sft/token_accuracy", "SFT token accuracy")
    axes[1].set_title("reward" if any("rollout/reward_mean" in row for row in train) else "SFT")
    curve(axes[2], "actor/pg_loss", "policy loss")
    curve(axes[2], "sft/loss", "SFT loss")
    axes[2].set_title("loss")
    # Template collapse: I(X;Z) falls towards 0 while H(Z) stays up (docs/starpo.md).
    for suffix, label, style in (("mi_estimate", "I(X;Z) per token", "o-"), ("mi_upper_bound", "log N", "k--"),
                                 ("conditional_entropy_est", "H(Z|X) per token", "o-"),
                                 ("reasoning_entropy_est", "H(Z) per token", "o-")):
        curve(axes[3], f"collapse_first_turn_sample/{suffix}", label, style)
    axes[3].set_title("collapse diagnostics (first turns)")
    for axis in axes:
        axis.set_xlabel("step")
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=8)
    figure.tight_layout()
    return figure
