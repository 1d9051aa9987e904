"""RAGEN-exact Sokoban level generation.

RAGEN (``ragen/env/sokoban/utils.py``, itself adapted from gym-sokoban) builds a level
in four stages, all driven by the *global* ``random`` and ``numpy.random`` states that
``ragen.utils.all_seed(seed)`` seeds with the level seed:

1. a random-walk room topology (Python ``random``),
2. player and box-target placement (legacy ``numpy.random.randint``),
3. a depth-limited "reverse play" search that pulls boxes off their targets and keeps
   the first state with the highest ``box_swaps * displacement`` score (no randomness),
4. up to three extra random player moves (Python ``random``).

This module reproduces that exact sequence of draws with generators owned by the
caller (a ``random.Random`` and a ``numpy.random.RandomState`` seeded like the
globals would be), so the global random states are never touched.  Python-level
draws go through ``getrandbits``/``random()`` only -- the Mersenne Twister primitives
whose streams CPython keeps stable -- instead of ``randint``/``sample``/``choice``,
whose implementations are allowed to change between Python releases.

Grids are flat ``bytearray`` objects in row-major order with the cell codes below.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

import numpy as np

# Cell codes shared with the env (gym-sokoban's, plus 6 for "player on target").
WALL, FLOOR, TARGET, BOX_ON_TARGET, BOX, PLAYER, PLAYER_ON_TARGET = range(7)

# RAGEN's walk changes direction with this probability and stamps one of these
# 3x3 floor masks (row-major) on each step.
_P_CHANGE_DIRECTION = 0.35
_WALK_DIRECTIONS = ((1, 0), (0, 1), (-1, 0), (0, -1))
_FLOOR_MASKS = (
    (0, 0, 0, 1, 1, 1, 0, 0, 0),
    (0, 1, 0, 0, 1, 0, 0, 1, 0),
    (0, 0, 0, 1, 1, 0, 0, 1, 0),
    (0, 0, 0, 1, 1, 0, 1, 1, 0),
    (0, 0, 0, 0, 1, 1, 0, 1, 0),
)
_GENERATION_TRIES = 4


def _recode(old: int, new: int) -> bytes:
    """A ``bytes.translate`` table replacing one cell code by another."""
    table = bytearray(range(256))
    table[old] = new
    return bytes(table)


_PLAYER_TO_FLOOR = _recode(PLAYER, FLOOR)  # the fixed layer
_TARGET_TO_BOX = _recode(TARGET, BOX)  # reverse play starts with every box on its target
_PULLED_TO_BOX = _recode(BOX_ON_TARGET, BOX)  # RAGEN's final ``room_state[room_state == 3] = 4``
_MAX_EXPLORED_STATES = 300_000


class GenerationFailed(RuntimeError):
    """The seed yields no level (too little floor, or no box could be moved).

    RAGEN raises ``RuntimeError``/``RuntimeWarning`` here and re-seeds; see
    :func:`fallback_seed` for this project's deterministic replacement.
    """


@dataclass(frozen=True)
class Level:
    """A generated level: fixed layer (walls/floor/targets) and movable layer."""

    height: int
    width: int
    fixed: bytes  # WALL / FLOOR / TARGET per cell
    state: bytes  # fixed layer plus BOX and PLAYER (boxes never start on targets)


def gym_sokoban_walk_steps(height: int, width: int) -> int:
    """gym-sokoban's default random-walk length, ``int(1.7 * (h + w))``."""
    return int(1.7 * (height + width))


def fallback_seed(seed: int) -> int:
    """Deterministic replacement seed for a seed whose generation fails.

    RAGEN re-seeds with ``abs(hash(str(seed))) % 2**32``, which depends on the
    per-process string-hash salt (``PYTHONHASHSEED``), so those levels cannot be
    reproduced.  We use the first four bytes of SHA-256 of ``"ragen-bench/sokoban/{seed}"``
    instead: stable everywhere, and equally "far" from the original seed.
    """
    digest = hashlib.sha256(f"ragen-bench/sokoban/{seed}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def _randbelow(rng: random.Random, n: int) -> int:
    """CPython's ``Random._randbelow`` (rejection sampling on ``getrandbits``).

    ``random.randint``, ``random.choice`` and ``random.sample(seq, 1)`` all reduce to
    exactly one such draw for the arguments RAGEN uses.
    """
    k = n.bit_length()
    r = rng.getrandbits(k)
    while r >= n:
        r = rng.getrandbits(k)
    return r


def _room_topology(rng: random.Random, height: int, width: int, walk_steps: int) -> bytearray:
    """Random-walk floor layout; border cells are always walls.

    The hot loop of level generation: draws are inlined (``getrandbits(3)`` with
    rejection is exactly ``_randbelow(4)`` and ``_randbelow(5)``).
    """
    getrandbits, uniform = rng.getrandbits, rng.random
    direction = _WALK_DIRECTIONS[_randbelow(rng, 4)]
    row = 1 + _randbelow(rng, height - 1)  # randint(1, dim_x - 1)
    col = 1 + _randbelow(rng, width - 1)  # randint(1, dim_y - 1)
    floor = bytearray(height * width)
    mask_offsets = [[(k // 3) * width + k % 3 for k, bit in enumerate(mask) if bit] for mask in _FLOOR_MASKS]
    last_row, last_col = height - 2, width - 2
    for _ in range(walk_steps):
        if uniform() < _P_CHANGE_DIRECTION:
            pick = getrandbits(3)
            while pick >= 4:
                pick = getrandbits(3)
            direction = _WALK_DIRECTIONS[pick]
        row += direction[0]
        col += direction[1]
        row = 1 if row < 1 else (last_row if row > last_row else row)
        col = 1 if col < 1 else (last_col if col > last_col else col)
        pick = getrandbits(3)
        while pick >= 5:
            pick = getrandbits(3)
        top_left = (row - 1) * width + (col - 1)
        for offset in mask_offsets[pick]:
            floor[top_left + offset] = FLOOR
    for col in range(width):
        floor[col] = floor[(height - 1) * width + col] = WALL
    for row in range(height):
        floor[row * width] = floor[row * width + width - 1] = WALL
    return floor


def _place_player_and_targets(np_rng: np.random.RandomState, room: bytearray, num_boxes: int) -> None:
    """Put the player, then ``num_boxes`` targets, on random floor cells (in place)."""
    free = [i for i, cell in enumerate(room) if cell == FLOOR]
    if len(free) <= num_boxes + 1:
        raise GenerationFailed(f"only {len(free)} floor cells for 1 player and {num_boxes} boxes")
    room[free[int(np_rng.randint(len(free)))]] = PLAYER
    for _ in range(num_boxes):
        free = [i for i, cell in enumerate(room) if cell == FLOOR]
        room[free[int(np_rng.randint(len(free)))]] = TARGET


class _ReversePlay:
    """RAGEN's depth-first reverse play, reproduced state for state.

    The search pulls boxes away from their targets.  Its visited set is keyed by
    the whole grid, where a box still on its original target keeps code ``BOX``
    and a box that has been pulled is coded ``BOX_ON_TARGET`` (RAGEN's quirk, kept
    because it decides which states count as already explored).  The first state
    reaching the best ``box_swaps * total_manhattan_displacement`` wins; states
    where any target is covered (by a box or the player) score 0.
    """

    def __init__(self, fixed: bytes, width: int, num_boxes: int, search_depth: int) -> None:
        self.fixed = fixed
        self.num_boxes = num_boxes
        self.search_depth = search_depth
        self.deltas = (-width, width, -1, 1)  # up, down, left, right
        self.rows = [i // width for i in range(len(fixed))]
        self.cols = [i % width for i in range(len(fixed))]
        self.explored: set[bytes] = set()
        self.best_score = -1
        self.best_state = b""
        self.best_displacement = 0

    def run(self, state: bytearray) -> None:
        targets = [i for i, cell in enumerate(self.fixed) if cell == TARGET]
        remaining = self.search_depth - 1  # RAGEN decrements its ttl on entry
        if remaining > 0:
            self._expand(state, state.index(PLAYER), bytes(state), {t: t for t in targets}, 0, 0, -1, remaining)

    def _expand(self, state, player, key, mapping, displacement, box_swaps, last_pull, remaining) -> None:
        """Score and expand one state that RAGEN's recursion would process.

        Children that RAGEN would enter only to return at once (ttl spent, state cap
        hit, or state already explored) are filtered here before the call.  ``state``
        is mutated in place and restored after each child, and the total displacement
        is updated incrementally: the visiting order and scores are RAGEN's.
        """
        explored = self.explored
        score = box_swaps * displacement
        if score and state.count(TARGET) != self.num_boxes:
            score = 0
        if score > self.best_score:
            self.best_score = score
            self.best_state = key
            self.best_displacement = displacement
        explored.add(key)

        fixed, rows, cols = self.fixed, self.rows, self.cols
        for delta in self.deltas:
            nxt = player + delta
            entered = state[nxt]
            if entered != FLOOR and entered != TARGET:
                continue  # RAGEN recurses into the unchanged (already explored) state
            behind = player - delta
            left_behind = state[behind]
            state[nxt] = PLAYER
            if left_behind == BOX or left_behind == BOX_ON_TARGET:
                state[player] = BOX_ON_TARGET
                state[behind] = fixed[behind]
                if remaining > 1 and len(explored) < _MAX_EXPLORED_STATES:
                    child_key = bytes(state)
                    if child_key not in explored:
                        pulled = next(target for target, box in mapping.items() if box == behind)
                        child_mapping = dict(mapping)
                        child_mapping[pulled] = player
                        child_displacement = (
                            displacement
                            - abs(rows[pulled] - rows[behind]) - abs(cols[pulled] - cols[behind])
                            + abs(rows[pulled] - rows[player]) + abs(cols[pulled] - cols[player])
                        )
                        self._expand(
                            state, nxt, child_key, child_mapping, child_displacement,
                            box_swaps + (pulled != last_pull), pulled, remaining - 1,
                        )
                state[behind] = left_behind
            else:
                state[player] = fixed[player]
                if remaining > 1 and len(explored) < _MAX_EXPLORED_STATES:
                    child_key = bytes(state)
                    if child_key not in explored:
                        self._expand(state, nxt, child_key, mapping, displacement, box_swaps, last_pull, remaining - 1)
            state[player] = PLAYER
            state[nxt] = entered


def _random_player_moves(rng: random.Random, state: bytearray, fixed: bytes, width: int, move_probability: float) -> None:
    """RAGEN's extra 1-3 random player steps (never revisiting a cell), in place."""
    if rng.random() > move_probability:
        return
    player = state.index(PLAYER)
    visited = [player]
    steps = 0
    while steps < 3:
        options = [
            nxt
            for nxt in (player - width, player + width, player - 1, player + 1)
            if (state[nxt] == FLOOR or state[nxt] == TARGET) and nxt not in visited
        ]
        if not options:
            break
        nxt = options[_randbelow(rng, len(options))]
        state[player] = fixed[player]
        state[nxt] = PLAYER
        player = nxt
        visited.append(player)
        steps += 1
        if steps >= 3 or rng.random() > 0.5:
            break


def generate_level(
    seed: int,
    height: int,
    width: int,
    num_boxes: int,
    search_depth: int,
    walk_steps: int | None = None,
    rng: random.Random | None = None,
    np_rng: np.random.RandomState | None = None,
) -> Level:
    """Generate RAGEN's level for ``seed`` or raise :class:`GenerationFailed`.

    ``rng``/``np_rng`` may be passed in to reuse generator objects (they are
    re-seeded here); the global random states are never read or written.
    """
    if not 0 <= seed < 2**32:
        raise ValueError(f"level seeds are 32-bit unsigned integers (as numpy's), got {seed}")
    rng = rng or random.Random()
    np_rng = np_rng or np.random.RandomState()
    rng.seed(seed)
    np_rng.seed(seed)
    if walk_steps is None:
        walk_steps = gym_sokoban_walk_steps(height, width)

    for _ in range(_GENERATION_TRIES):
        room = _room_topology(rng, height, width, walk_steps)
        _place_player_and_targets(np_rng, room, num_boxes)
        fixed = bytes(room.translate(_PLAYER_TO_FLOOR))
        start = room.translate(_TARGET_TO_BOX)
        search = _ReversePlay(fixed, width, num_boxes, search_depth)
        search.run(start)
        score = search.best_displacement
        if score > 0:
            break
    if score == 0:
        raise GenerationFailed("reverse play could not move any box")

    state = bytearray(search.best_state.translate(_PULLED_TO_BOX))
    _random_player_moves(rng, state, fixed, width, 0.8 if score == 1 else 0.5)
    return Level(height, width, fixed, bytes(state))


def generate_level_with_fallback(seed: int, **kwargs) -> tuple[Level, int, int]:
    """Generate ``seed``'s level, re-seeding with :func:`fallback_seed` on failure.

    Returns ``(level, level_seed, fallbacks)`` where ``level_seed`` is the seed that
    finally produced the level and ``fallbacks`` how many re-seeds it took.
    """
    level_seed = seed
    for fallbacks in range(64):
        try:
            return generate_level(level_seed, **kwargs), level_seed, fallbacks
        except GenerationFailed:
            level_seed = fallback_seed(level_seed)
    raise GenerationFailed(
        f"seed {seed}: no {kwargs.get('height')}x{kwargs.get('width')} level with {kwargs.get('num_boxes')} boxes "
        "after 64 fallback seeds (too many boxes for the room?)"
    )
