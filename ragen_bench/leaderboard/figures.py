"""The leaderboard's plots (matplotlib, Agg), as PNG bytes that a rebuild reproduces exactly.

``success-<suite>.png``, one per suite (:func:`success_plot`), ``generalization.png``
(:func:`generalization_plot`) and ``learning_curves.png`` (:func:`learning_curves_plot`);
:mod:`.build` writes them and :mod:`.page` embeds them.  Labels are free text drawn as
written (:mod:`ragen_bench.plots`).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragen_bench.leaderboard.errors import needs_extra
from ragen_bench.leaderboard.tables import scores_beyond_success, short_env
from ragen_bench.plots import AS_WRITTEN, legend_label, plot_text

if TYPE_CHECKING:
    from types import ModuleType

    from matplotlib.figure import Figure

    from ragen_bench.leaderboard.verify import VerifiedRun


def _figure_bytes(figure: Figure) -> bytes:
    """PNG bytes with no metadata that could vary (the Software key names matplotlib's version)."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    plt.close(figure)
    return buffer.getvalue()


def _pyplot() -> ModuleType:
    needs_extra("matplotlib").use("Agg")
    import matplotlib.pyplot as plt

    # Fixed salt: SVG ids would otherwise be random (PNG output has none, but a saved
    # SVG from the same figure code must be reproducible too).
    plt.rcParams["svg.hashsalt"] = "ragen-bench-leaderboard"
    # Labels are free text (plot_text); a reader's matplotlibrc must not turn TeX on under them.
    plt.rcParams.update(AS_WRITTEN)
    return plt


# A suite's plot is as wide as the page shows it at 1280 px (dpi 100), so its labels are drawn at
# their size rather than scaled down.
PAGE_WIDTH_INCHES = 12.0


def success_plot(rows: Sequence[Mapping[str, Any]], title: str) -> bytes:
    """Grouped bars for one suite: what the ranking averages per env (x) and entry (bar), with the 95% CI as error
    bars: the success rate, or the progress where a world has a score of its own (so the title says progress)."""
    own = scores_beyond_success(rows)
    key = "progress" if own else "success"
    plt = _pyplot()
    envs = sorted({(row["env"], row["split"]) for row in rows})
    names = sorted({row["entry"] for row in rows})
    by_key = {(row["entry"], row["env"], row["split"]): row for row in rows}
    # Room for every bar, up to the page's width.
    figure, axes = plt.subplots(figsize=(min(PAGE_WIDTH_INCHES, 5.0 + 0.35 * len(envs) * len(names)), 4.2))
    width = 0.8 / len(names)
    for index, name in enumerate(names):
        xs, heights, errors = [], [], [[], []]
        for position, (env, split) in enumerate(envs):
            row = by_key.get((name, env, split))
            if row is None:
                continue
            xs.append(position + (index - (len(names) - 1) / 2) * width)
            heights.append(row[key])
            # max(0, ...): at a rate of 0 or 1 the Wilson bound can sit an ulp inside the rate.
            errors[0].append(max(0.0, row[key] - row[f"{key}_low"]))
            errors[1].append(max(0.0, row[f"{key}_high"] - row[key]))
        axes.bar(xs, heights, width, yerr=errors, capsize=3, label=legend_label(name))
    axes.set_xticks(range(len(envs)), [plot_text(short_env(env)) for env, _ in envs], rotation=30, ha="right")
    axes.set_ylim(0, 1.05)
    axes.set_ylabel("progress: success or own score (95% CI)" if own else "success rate (95% CI)")
    # Over the figure, not the axes: beside a wide legend one env's axes are narrower than the title.
    figure.suptitle(plot_text(f"{'Progress' if own else 'Success'} by env: {title}"))
    # Beside the axes, not over the bars: a suite may have a bar of 1.0 in every env.
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    figure.tight_layout()
    return _figure_bytes(figure)


def generalization_plot(general: Sequence[Mapping[str, Any]]) -> bytes:
    """Heatmap: rows are entry x train env, columns held-out envs, cells the gap to in-distribution."""
    import numpy as np

    plt = _pyplot()
    row_keys = sorted({(g["entry"], g["train_env"]) for g in general})
    columns = sorted({g["test_env"] for g in general})
    figure, axes = plt.subplots(figsize=(min(PAGE_WIDTH_INCHES, max(6.0, 1.4 * len(columns) + 3)),
                                        1.0 + 0.6 * max(1, len(row_keys))))
    if not general:
        axes.text(0.5, 0.5, "no suite entries", ha="center", va="center")
        axes.set_axis_off()
        return _figure_bytes(figure)
    grid = np.full((len(row_keys), len(columns)), np.nan)
    for g in general:
        grid[row_keys.index((g["entry"], g["train_env"])), columns.index(g["test_env"])] = g["gap"]
    image = axes.imshow(grid, cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    for (i, j), value in np.ndenumerate(grid):
        if not np.isnan(value):
            axes.text(j, i, f"{value:+.2f}", ha="center", va="center", fontsize=8)
    axes.set_xticks(range(len(columns)), [plot_text(c.removeprefix("RAGEN/")) for c in columns], rotation=30,
                    ha="right")
    axes.set_yticks(range(len(row_keys)), [plot_text(f"{e} / {t.removeprefix('RAGEN/')}") for e, t in row_keys])
    axes.set_title("Held-out success minus in-distribution success (train env -> test env)")
    figure.colorbar(image, ax=axes, label="gap")
    figure.tight_layout()
    return _figure_bytes(figure)


def learning_curves_plot(runs: Sequence[VerifiedRun]) -> bytes:
    """Per trained run (one with ``training_metrics``): rollout success and each validation split's success per step."""
    plt = _pyplot()
    trained = [run for run in runs if run.training is not None]
    # At most three runs a row: the figure stays as wide as the page and each run's labels legible.
    columns = min(3, max(1, len(trained)))
    rows = max(1, -(-len(trained) // columns))
    figure, grid = plt.subplots(rows, columns, figsize=(4.0 * columns, 3.6 * rows), squeeze=False)
    axes = grid.ravel()
    for axis in axes[len(trained):]:
        axis.set_axis_off()
    if not trained:
        axes[0].text(0.5, 0.5, "no entry with training_metrics", ha="center", va="center")
        return _figure_bytes(figure)
    for axis, run in zip(axes, trained):
        log = run.training
        train = [(row["step"], row["rollout/success"]) for row in log.metrics if "rollout/success" in row]
        if train:
            axis.plot([step for step, _ in train], [value for _, value in train], "-", label="train (rollout) success")
        for split in sorted({row["split"] for row in log.validation}):
            points = [(row["step"], row["success_rate"]) for row in log.validation if row["split"] == split]
            axis.plot([step for step, _ in points], [value for _, value in points], "o-",
                      label=legend_label(f"{split} success"))
        axis.set_ylim(-0.02, 1.02)
        axis.set_xlabel("training step")
        axis.set_title(plot_text(run.info.name), fontsize="medium")
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize="small")
    for axis in grid[:, 0]:
        axis.set_ylabel("success rate")
    figure.tight_layout()
    return _figure_bytes(figure)
