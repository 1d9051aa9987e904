"""TextArena's two-player games as PettingZoo ids: the frozen table (``ragen_bench/data/textarena.py``)."""

from __future__ import annotations

from ragen_bench.data import textarena

TWO_PLAYER: tuple[str, ...] = textarena.TWO_PLAYER
# Every game of the ids and its number of seats: the two-player games, then those of three to six.
SEATS: dict[str, int] = {**dict.fromkeys(TWO_PLAYER, 2), **textarena.MANY_PLAYERS}
SEAT_MOVES: int = textarena.SEAT_MOVES


def game_id(game: str) -> str:
    """The registered id of a two-player game (``Nim-v0`` -> ``RAGEN/TA-Nim-v0``)."""
    return f"RAGEN/TA-{game.removesuffix('-v0')}-v0"


def _pairs(size: int, reach: int, separator: str = " ") -> tuple[str, ...]:
    """Every ``[a1 b2]`` move on a ``size`` x ``size`` board (files a.., ranks 1..) of at most ``reach`` squares
    along a rank, a file or both: the game's steps and jumps, fewer candidates to try."""
    squares = [(file, rank) for rank in range(1, size + 1) for file in range(size)]
    return tuple(
        f"[{chr(97 + f1)}{r1}{separator}{chr(97 + f2)}{r2}]"
        for f1, r1 in squares for f2, r2 in squares
        if (f1, r1) != (f2, r2) and abs(f1 - f2) <= reach and abs(r1 - r2) <= reach
    )


# The move set of games whose text does not list its moves each turn (the rest show them, in brackets):
# what the scripted ``random`` opponent tries, besides the moves the text shows (legal ones only: each is
# tried on a copy of the game first).
KNOWN_MOVES: dict[str, tuple[str, ...]] = {
    "TicTacToe-v0": tuple(f"[{cell}]" for cell in range(9)),
    "ConnectFour-v0": tuple(f"[col {col}]" for col in range(7)),
    "Nim-v0": tuple(f"[{pile} {count}]" for pile in range(6) for count in range(1, 10)),
    "Battleship-v0": tuple(f"[{row}{col}]" for row in "abcdefghij" for col in range(10)),
    "Chopsticks-v0": (*(f"[attack {m} {o}]" for m in range(2) for o in range(2)),
                      *(f"[split {left} {right}]" for left in range(5) for right in range(5))),
    "Briscola-v0": tuple(f"[play {card}]" for card in range(1, 4)),
    "UltimateTicTacToe-v0": tuple(f"[{board} {cell}]" for board in range(9) for cell in range(9)),
    "Othello-v0": tuple(f"[{row}, {col}]" for row in range(8) for col in range(8)),
    "Alquerque-v0": _pairs(5, 2),
    "Breakthrough-v0": _pairs(8, 1, ""),
    "Crusade-v0": _pairs(8, 2),
}
