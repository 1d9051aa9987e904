"""Text that matplotlib draws exactly as written: labels, titles and legend entries made of
free text (env ids, split names, submission names), shared by the trainer's ``curves.png`` and
the leaderboard's plots.

Imports nothing (matplotlib included): the callers bring matplotlib and apply :data:`AS_WRITTEN`.
"""

from __future__ import annotations

# The rc settings :func:`plot_text` relies on. A reader's matplotlibrc may turn TeX on: it would
# read "_", "#", "%", "&" and "{" of a label as TeX (and need a TeX install); the escaping below
# is for matplotlib's own renderer only.
AS_WRITTEN = {"text.usetex": False}


def plot_text(text: str) -> str:
    """``text`` escaped so that matplotlib draws it as written, never as mathtext.

    Matplotlib reads a text holding an even number of unescaped ``$`` as mathtext (``val $x^{$``
    fails to parse, ``$\\alpha$`` draws a Greek letter) and draws ``\\$`` as ``$``. With every ``$``
    escaped no math starts, and the un-escaping gives back exactly ``text``, backslashes included.
    Outside math no other character is special (under :data:`AS_WRITTEN`: TeX off).
    """
    return text.replace("$", "\\$")


def legend_label(text: str) -> str:
    """A legend entry drawing ``text``: :func:`plot_text`, and a label matplotlib would leave out
    (one starting with ``_``, its mark for "no legend") led by a space."""
    text = plot_text(text)
    return " " + text if text.startswith("_") else text
