"""The 2x2 cube of RAGEN-2 (mll-lab-nu/RAGEN 20daedc): stickers, the twelve turns, the scramble.

**Stickers.**  A state is 24 sticker colours, four per face in the face order
``U L F R B D``; sticker ``4 * face + k`` is the face's top-left (k=0), top-right (1),
bottom-left (2) or bottom-right (3) cell as the text net prints it.  Colours are the
letters the net shows (:data:`COLOURS`); the solved cube has face ``f`` all in colour ``f``.

**Turns.**  Each clockwise turn moves three 4-cycles of stickers (:data:`CLOCKWISE_CYCLES`,
``(a, b, c, d)``: the sticker at ``a`` moves to ``b``, ``b`` to ``c``, ...); a prime turn is
its inverse.  These are RAGEN-2's turns as its code applies them, which is not quite a
physical cube: its ``B`` sends the Down stickers of the two back corners to each other's
corner (positions 22 and 23 swapped relative to a physical ``B`` turn, and so the stickers
entering Right).  With a physical ``B`` the twelve turns would generate the 88,179,840
sticker arrangements of a real pocket cube (3,674,160 positions times 24 orientations);
with RAGEN-2's they generate every permutation of the 24 stickers (24!), so the reachable
colourings number 24! / (4!)^6, about 3.2e15.  The solver (``solver.py``) searches that
graph exactly as it is.

**Solved** means every face shows one colour (any colours: ``U D'`` turns the whole solved
cube into another solved one), as RAGEN-2 checks it.  That set is closed under renaming
colours, and so are the turns, so a state's distance to solved depends only on its
colouring up to renaming: :func:`canonical` renames colours in order of first appearance.

**Encoding.**  Turns are precomputed as ``bytes.translate`` index strings: a state is kept
inside a 256-byte translation table (its colours at :data:`SLOT` .. ``SLOT + 23``, every
other byte mapping to itself), so ``TURN_TABLES[a].translate(table)`` is the turned state's
table (``TURNS[a]`` gathers just the 24 turned colours) and ``net.translate(table)`` fills
the colours into a text template whose sticker cells hold the bytes ``SLOT + i``: one C
call each.
"""

from __future__ import annotations

import itertools

import numpy as np

FACES = "ULFRBD"
FACE_NAMES = ("Up", "Left", "Front", "Right", "Back", "Down")
COLOURS = b"WOGRBY"  # the solved colour of each face, in FACES order
COLOUR_NAMES = ("white", "orange", "green", "red", "blue", "yellow")
STICKERS = 24

# Action i turns face TURN_FACES[i // 2], clockwise for even i, prime (counter-clockwise) for
# odd i.  RAGEN-2 numbers the same twelve turns 1..12 (its id = ours + 1).
TURN_FACES = "UDLRFB"
ACTION_NAMES = tuple(name for face in TURN_FACES for name in (face, face + "'"))

CLOCKWISE_CYCLES: dict[str, tuple[tuple[int, int, int, int], ...]] = {
    "U": ((0, 1, 3, 2), (4, 16, 12, 8), (5, 17, 13, 9)),
    "D": ((20, 21, 23, 22), (6, 10, 14, 18), (7, 11, 15, 19)),
    "L": ((4, 5, 7, 6), (0, 8, 20, 19), (2, 10, 22, 17)),
    "R": ((12, 13, 15, 14), (1, 18, 21, 9), (3, 16, 23, 11)),
    "F": ((8, 9, 11, 10), (2, 12, 21, 7), (3, 14, 20, 5)),
    "B": ((16, 17, 19, 18), (0, 6, 22, 13), (1, 4, 23, 15)),  # RAGEN-2's B (see the module doc)
}

# Where the colours live inside a state table: bytes SLOT .. SLOT+23 (beyond ASCII).
SLOT = 0x80
_ASCII = bytes(range(SLOT))
_ABOVE = bytes(range(SLOT + STICKERS, 256))


def _sources(action: int) -> tuple[int, ...]:
    """``src`` with ``turned[i] = colours[src[i]]`` for ``action``."""
    source = list(range(STICKERS))
    for cycle in CLOCKWISE_CYCLES[TURN_FACES[action // 2]]:
        prime = action % 2
        for position, following in zip(cycle, cycle[1:] + cycle[:1]):
            # Clockwise the sticker at `position` moves on to `following`; prime moves it back.
            if prime:
                source[position] = following
            else:
                source[following] = position
    return tuple(source)


SOURCES: tuple[tuple[int, ...], ...] = tuple(_sources(action) for action in range(len(ACTION_NAMES)))
# turn.translate(state table) -> the 24 turned colours.
TURNS: tuple[bytes, ...] = tuple(bytes(SLOT + i for i in source) for source in SOURCES)
# turn_table.translate(state table) -> the turned state table (every other byte maps to itself).
TURN_TABLES: tuple[bytes, ...] = tuple(_ASCII + turn + _ABOVE for turn in TURNS)

SOLVED = bytes(colour for colour in COLOURS for _ in range(4))
# Every colouring with each face in one colour: a face-to-colour assignment each.
SOLVED_SET = frozenset(bytes(c for c in order for _ in range(4)) for order in itertools.permutations(COLOURS))


def table(colours: bytes) -> bytes:
    """The 256-byte state table of 24 colours (see the module doc)."""
    return _ASCII + colours + _ABOVE


SOLVED_TABLE = table(SOLVED)


def colours_of(state_table: bytes) -> bytes:
    """The 24 colours a state table holds."""
    return state_table[SLOT : SLOT + STICKERS]


def turn(colours: bytes, action: int) -> bytes:
    """The colours after ``action``."""
    return TURNS[action].translate(table(colours))


# numpy's bounded integers below 12 (Lemire's method on 32-bit words): word * 12, rejected
# when its low 32 bits fall below (2**32 - 12) % 12.
_LOW32 = 0xFFFFFFFF
_REJECT_BELOW = (2**32 - len(ACTION_NAMES)) % len(ACTION_NAMES)


def scramble(rng: np.random.Generator, depth: int) -> tuple[tuple[int, ...], bytes]:
    """RAGEN-2's scramble of the solved cube: ``(turns, state table)`` after ``depth`` turns drawn by ``rng``.

    RAGEN-2 draws ``rng.integers(1, 13)`` once per turn from a fresh generator of the seed.
    That is numpy's Lemire draw over the generator's 32-bit words (a 64-bit output's low
    half, then its high half), done here on ``random_raw`` outputs directly: the same turns
    (minus one: ids from 0), at a fraction of ``integers``' call overhead.  ``rng`` must be
    freshly seeded (no half word pending), as RAGEN-2's and our ``np_random`` after a seeded
    reset are.
    """
    draw = rng.bit_generator.random_raw
    turns: list[int] = []
    state = SOLVED_TABLE
    count, low32, reject_below, turn_tables = len(ACTION_NAMES), _LOW32, _REJECT_BELOW, TURN_TABLES
    words = draw((depth + 1) // 2).tolist()  # enough unless a draw is rejected (4 in 2**32)
    while True:
        for word in words:
            for product in (count * (word & low32), count * (word >> 32)):
                if product & low32 >= reject_below and len(turns) < depth:
                    action = product >> 32
                    turns.append(action)
                    state = turn_tables[action].translate(state)
        if len(turns) == depth:
            return tuple(turns), state
        words = [draw()]


_CANONICAL_LABELS = bytes(range(len(COLOURS)))


def canonical(colours: bytes) -> bytes:
    """``colours`` with colours renamed ``0, 1, ...`` in order of first appearance."""
    return colours.translate(bytes.maketrans(bytes(dict.fromkeys(colours)), _CANONICAL_LABELS))


def colour_indices(colours: bytes) -> np.ndarray:
    """The 24 colours as indices into :data:`COLOURS` (``uint8``; 0 white ... 5 yellow)."""
    return np.frombuffer(colours.translate(bytes.maketrans(COLOURS, _CANONICAL_LABELS)), dtype=np.uint8).copy()
