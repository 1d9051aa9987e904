"""RAGEN-2's ``grid_coord`` observations: the grid preceded by zero-indexed coordinates.

RAGEN-2 (mll-lab-nu/RAGEN 20daedc, ``observation_format: "grid_coord"``) shows a grid
env's board twice: first as a list of labelled ``(row, col)`` coordinates, one line per
kind of thing that is on the board, then as the usual symbol grid.  The layout is a
data format the agent is trained on, so it is reproduced character for character:

    Coordinates: 
    Board size: 6 rows x 6 cols (zero-indexed).
    Targets: (2, 2)
    Boxes: (3, 3)
    Player: (2, 4)
    Grid Map: 
    ######
    ...

(note the space before each of the two header line breaks).  A label whose list is empty
is left out.  Coordinates are listed in row-major order, as ``numpy.argwhere`` finds them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

OBSERVATION_FORMATS = ("grid", "grid_coord")
# What an env's instruction adds in the ``grid_coord`` format (this project's words).
INSTRUCTION = (
    "Each observation first lists the zero-indexed (row, column) coordinates of what is on "
    "the board, (0, 0) being the top-left cell, and then shows the grid itself."
)

_COORDINATES_HEADER = "Coordinates: \n"
_GRID_HEADER = "\nGrid Map: \n"


def board_size_line(rows: int, cols: int) -> str:
    return f"Board size: {rows} rows x {cols} cols (zero-indexed)."


def format_points(points: Iterable[tuple[int, int]]) -> str:
    return ", ".join(f"({row}, {col})" for row, col in points)


def labelled_lines(labelled: Iterable[tuple[str, Sequence[tuple[int, int]]]]) -> list[str]:
    """One ``Label: (r, c), ...`` line per ``(label, points)`` with points, in the given order."""
    return [f"{label}: {format_points(points)}" for label, points in labelled if points]


def grid_coord_text(size_line: str, lines: Sequence[str], grid: str) -> str:
    """The whole observation, from the board-size line, the labelled lines and the grid."""
    return _COORDINATES_HEADER + "\n".join((size_line, *lines)) + _GRID_HEADER + grid


def max_text_length(rows: int, cols: int, labels: Sequence[str], max_points: int, grid_chars: int) -> int:
    """An upper bound on :func:`grid_coord_text`'s length (for the observation space).

    Every label present, with ``max_points`` points shared among them, each point as
    wide as the board's largest coordinates.
    """
    point = len(f"({rows - 1}, {cols - 1})") + len(", ")
    label_chars = sum(len(label) + len(": \n") for label in labels)
    fixed = len(_COORDINATES_HEADER) + len(board_size_line(rows, cols)) + len(_GRID_HEADER)
    return fixed + label_chars + max_points * point + grid_chars


def charset_texts(rows: int, cols: int, labels: Sequence[str]) -> tuple[str, ...]:
    """Strings holding every character a coordinate block can contain."""
    return (
        _COORDINATES_HEADER,
        _GRID_HEADER,
        board_size_line(rows, cols),
        "0123456789(), :",
        *labels,
    )
