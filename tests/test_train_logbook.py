"""The trainer's ``curves.png``: free-text split names are drawn as written, whatever the reader's matplotlibrc."""

from __future__ import annotations

import pytest

matplotlib = pytest.importorskip("matplotlib")

from ragen_bench.train.logbook import (  # noqa: E402
    METRICS, VALIDATION, _draw_curves, append_line, plot_curves, read_lines,
)

# "val $x^{$" is mathtext that does not parse; "_held" is matplotlib's mark for "no legend entry".
SPLITS = ("val $x^{$", "_held", "$\\alpha$")


def write_logs(out) -> None:
    for step in (1, 2):
        append_line(out / METRICS, {"step": step, "rollout/success": 0.5, "actor/pg_loss": 0.1})
        for split in SPLITS:
            append_line(out / VALIDATION, {"step": step, "split": split, "success_rate": 0.25 * step})


def test_curves_are_written_for_splits_with_dollars_and_underscores(tmp_path):
    write_logs(tmp_path)
    path = plot_curves(tmp_path)
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_a_matplotlibrc_with_tex_on_does_not_reach_the_curves(tmp_path, monkeypatch):
    # With TeX on, matplotlib would call a `latex` binary (absent here) for every label.
    monkeypatch.setitem(matplotlib.rcParams, "text.usetex", True)
    write_logs(tmp_path)
    assert plot_curves(tmp_path).stat().st_size > 0
    assert matplotlib.rcParams["text.usetex"] is True  # the reader's setting is left as it was


def test_every_split_has_a_legend_entry_reading_as_written(tmp_path):
    import matplotlib.pyplot as plt

    write_logs(tmp_path)
    figure = _draw_curves(plt, read_lines(tmp_path / METRICS), read_lines(tmp_path / VALIDATION))
    entries = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    plt.close(figure)
    # Matplotlib shows "\$" as "$"; the "_held" entry is led by a space so that it is not dropped.
    assert [entry.replace("\\$", "$") for entry in entries] == [
        "rollout success", "val $x^{$ success", " _held success", "$\\alpha$ success"]
