"""TextArena's games as ids: the frozen tables (``ragen_bench/data/textarena.py``) the env and the tests share."""

from __future__ import annotations

from ragen_bench.data import textarena

SINGLE_PLAYER: tuple[str, ...] = tuple(textarena.SINGLE_PLAYER)
LEFT_OUT: dict[str, str] = textarena.LEFT_OUT
FAMILY = "textarena"

# The move set of single-player games whose text shows no list of moves to play (it states a format,
# ``[row col]``, or shows a board in brackets): ``valid`` is the moves of the set TextArena takes now, each
# tried on a copy of the game.  Games whose moves are words or names (Crosswords, LogicPuzzle) have none, and
# so does Sudoku: it takes only the solution's digits, so the moves it takes would give the puzzle away.
KNOWN_MOVES: dict[str, tuple[str, ...]] = {
    "Bandit-v0": tuple(f"[{button}]" for button in ("red", "blue", "green", "yellow", "purple")),
    "TowerOfHanoi-v0": tuple(f"[{source} {target}]" for source in "ABC" for target in "ABC" if source != target),
    "LightsOut-v0": tuple(f"[{row} {col}]" for row in range(5) for col in range(5)),
    "PegJump-v0": tuple(f"[{start} {end}]" for start in range(1, 16) for end in range(1, 16) if start != end),
    "Countdown-v0": tuple(f"[{i} {j} {op}]" for i in range(6) for j in range(6) if i != j for op in "+-*/"),
    "Slitherlink-v0": tuple(f"[{kind} {row} {col}]" for kind in "hv" for row in range(5) for col in range(5)),
    "Cryptarithm-v0": tuple(f"[{chr(65 + letter)} {digit}]" for letter in range(26) for digit in range(10)),
}


def env_id(game: str) -> str:
    """The registered id of a single-player game (``2048-v0`` -> ``RAGEN/TA-2048-v0``)."""
    return f"RAGEN/TA-{game.removesuffix('-v0')}-v0"
