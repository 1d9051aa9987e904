"""RAGEN-2's Sudoku action text: which placement a string names, or why it names none.

The text is stripped and lower-cased, then six forms are tried in a fixed order, each
searched anywhere in the text; the first form found decides (later forms are not
tried, even when the numbers of the first are out of range):

1. ``place N at row R col C``
2. ``place N at (R,C)``
3. ``place N at R,C``
4. ``N at R,C``
5. ``(A,B,C)``
6. ``A,B,C``

Spaces may follow each comma; forms 1-4 need at least one space (any Unicode space)
around their words.  Numbers are runs of Unicode decimal digits (``٣`` and ``３`` count)
and are read as ``int``.  In forms 5 and 6 the number comes first when the text contains
``place`` or ``at`` anywhere (``"(2,3,5) what"`` places 2 at row 3, column 5), and last
otherwise (``"2,3,5"`` places 5 at row 2, column 3).  Rows and columns count from 1.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_NUMBER = r"(\d+)"
_COMMA = r",\s*"
# Each form with a word it contains: a text without that word cannot match it, so the search is skipped.
_FORMS = tuple(
    (word, re.compile(form))
    for word, form in (
        ("place", rf"place\s+{_NUMBER}\s+at\s+row\s+{_NUMBER}\s+col\s+{_NUMBER}"),
        ("place", rf"place\s+{_NUMBER}\s+at\s+\({_NUMBER}{_COMMA}{_NUMBER}\)"),
        ("place", rf"place\s+{_NUMBER}\s+at\s+{_NUMBER}{_COMMA}{_NUMBER}"),
        ("at", rf"{_NUMBER}\s+at\s+{_NUMBER}{_COMMA}{_NUMBER}"),
        ("", rf"\({_NUMBER}{_COMMA}{_NUMBER}{_COMMA}{_NUMBER}\)"),
        ("", rf"{_NUMBER}{_COMMA}{_NUMBER}{_COMMA}{_NUMBER}"),
    )
)


class Placement(NamedTuple):
    """Put ``digit`` in the cell at zero-based ``row``, ``col``."""

    row: int
    col: int
    digit: int


def parse(action: str, n: int) -> Placement | str:
    """The placement ``action`` names on a board of side ``n``, or the error message RAGEN-2 gives."""
    text = action.strip().lower()
    for word, form in _FORMS:
        found = form.search(text) if word in text else None
        if found is None:
            continue
        first, second, third = map(int, found.groups())
        if "place" in text or "at" in text:
            digit, row, col = first, second, third
        else:
            row, col, digit = first, second, third
        for name, value in (("Row", row), ("Column", col), ("Number", digit)):
            if not 1 <= value <= n:
                return f"{name} {value} is out of range (1-{n})"
        return Placement(row - 1, col - 1, digit)
    return f"Could not parse action: '{text}'. Expected format: 'place 5 at row 2 col 3' or '2,3,5'"


def placement_text(placement: Placement) -> str:
    """The action text (form 1) for ``placement``."""
    return f"place {placement.digit} at row {placement.row + 1} col {placement.col + 1}"
