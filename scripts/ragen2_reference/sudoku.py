"""Record RAGEN-2's Sudoku episodes (``SimpleSudoku`` and ``MediumSudoku`` of its ``config/envs.yaml``,
and the same env on a 4x4 board).

For each config and every seed of 0-99 and of the test panel, one record: the reset
observation and the puzzle, then a fixed action sequence's observations, rewards, done flags
and info.  The actions are chosen by ``random.Random(seed)`` from RAGEN-2's own board state:
mostly the solution digit of a random cell that can take it now (so episodes get solved), in
one of the action forms RAGEN-2 reads, and otherwise a probe of another kind -- text that
names no placement, numbers out of range, a given cell, a digit the row, column or box
already holds, a valid digit other than the solution's, a placed cell rewritten, Unicode
digits, upper case, ``at`` inside a word.  Seeds 0-99 play until RAGEN-2 says done or
``max_steps + EXTRA_STEPS`` actions (RAGEN-2 never ends an episode on a refused action), the
test panel's seeds their first ``PANEL_STEPS`` actions.  ``tests/test_sudoku.py`` replays the
recorded actions on our ids and compares.

    /work/ragen2-venv/bin/python scripts/ragen2_reference/sudoku.py /work/ragen2

Observations are kept whole for the first ``FULL_TEXT_STEPS`` steps and as the first 16 hex
digits of their SHA-256 afterwards.  The file is written gzipped (``sudoku.jsonl.gz``,
byte-reproducible).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer  # noqa: E402

# Our id -> RAGEN-2's SudokuEnvConfig keyword arguments (envs.yaml's env_config; 4x4 is ours).
CONFIGS = {
    "RAGEN/Sudoku-9x9-Easy-v0": dict(grid_size=9, difficulty="easy", render_format="with_feedback",
                                     show_conflicts=True, show_valid_numbers=True, max_steps=81),
    "RAGEN/Sudoku-9x9-Medium-v0": dict(grid_size=9, difficulty="medium", render_format="with_feedback",
                                       show_conflicts=True, show_valid_numbers=True, max_steps=81),
    "RAGEN/Sudoku-4x4-v0": dict(grid_size=4, difficulty="easy", render_format="with_feedback",
                                show_conflicts=True, show_valid_numbers=True, max_steps=16),
}
PANEL_STEPS = 12
EXTRA_STEPS = 3
FULL_TEXT_STEPS = 3
PROBE_SHARE = 0.3

NO_PLACEMENT = (
    "", "   ", "hello", "place five at row one col two", "<answer>2,3</answer>", "1,2", "row 2 col 3: 5",
    "1.5,2,3", "-1,2,3 minus", "place 5 at row 2, col 3", "İSTANBUL 1;2;3", "ǅ 4 , 5", "\u00a0\u2003",
)
OUT_OF_RANGE = ("0,0,0", "10,1,1", "1,10,1", "1,1,10", "place 0 at row 1 col 1", "99999999999999999999,1,1",
                "place 3 at row 12 col 1", "(1,1,0)", "5 at 0,4")


def forms(digit: int, row: int, col: int) -> list[str]:
    """Ways to write "``digit`` at (``row``, ``col``)" (1-based) that RAGEN-2 reads alike."""
    return [
        f"place {digit} at row {row} col {col}",
        f"place {digit} at ({row},{col})",
        f"place {digit} at {row}, {col}",
        f"{digit} at {row},{col}",
        f"({row},{col},{digit})",
        f"{row},{col},{digit}",
        f"  PLACE {digit} AT ROW {row} COL {col}  ",
        f"<think>ok</think> {row}, {col},\t{digit}",
        f"what about ({digit}, {row}, {col})",
        f"place {digit} at row {row} col {col} || 1,1,1",
        "{},{},{}".format(*(chr(0x0660 + d) for d in (row, col, digit))),  # Arabic-Indic digits
        "{},{},{}".format(*(chr(0xFF10 + d) for d in (row, col, digit))),  # fullwidth digits
    ]


def write(rng: random.Random, digit: int, cell: tuple[int, int]) -> str:
    return rng.choice(forms(digit, cell[0] + 1, cell[1] + 1))


def candidates(grid, row: int, col: int, n: int) -> list[int]:
    box = int(n**0.5)
    r0, c0 = row // box * box, col // box * box
    used = set(grid[row, :].tolist()) | set(grid[:, col].tolist()) | set(grid[r0:r0 + box, c0:c0 + box].flatten().tolist())
    return [d for d in range(1, n + 1) if d not in used]


def choose(env, rng: random.Random) -> str:
    """The next action: a solving move, or a probe (see the module docstring)."""
    n = env.grid_size
    grid, givens, solution = env.current_grid, env.initial_grid, env.solution_grid
    cells = [(r, c) for r in range(n) for c in range(n)]
    blanks = [cell for cell in cells if grid[cell] == 0]
    placed = [cell for cell in cells if grid[cell] != 0 and givens[cell] == 0]
    fixable = [cell for cell in cells if grid[cell] != solution[cell] and solution[cell] in candidates(grid, *cell, n)]
    if fixable and rng.random() >= PROBE_SHARE:
        cell = rng.choice(fixable)
        return write(rng, int(solution[cell]), cell)
    kind = rng.randrange(7)
    if kind == 0:
        return rng.choice(NO_PLACEMENT)
    if kind == 1:
        return rng.choice(OUT_OF_RANGE)
    if kind == 2:
        cell = rng.choice([cell for cell in cells if givens[cell] != 0])
        return write(rng, rng.randint(1, n), cell)
    if kind == 3 and blanks:
        cell = rng.choice(blanks)
        taken = [d for d in range(1, n + 1) if d not in candidates(grid, *cell, n)]
        if taken:
            return write(rng, rng.choice(taken), cell)
    if kind == 4 and blanks:
        cell = rng.choice(blanks)
        others = [d for d in candidates(grid, *cell, n) if d != solution[cell]]
        if others:
            return write(rng, rng.choice(others), cell)
    if kind == 5 and placed:
        cell = rng.choice(placed)
        return write(rng, int(grid[cell]), cell)  # the digit already there: a clash with itself
    if kind == 6 and placed:
        cell = rng.choice(placed)
        digits = candidates(grid, *cell, n)
        if digits:
            return write(rng, rng.choice(digits), cell)
    return rng.choice(NO_PLACEMENT + OUT_OF_RANGE)


def play(env, env_id: str, seed: int, steps: int) -> dict:
    obs = env.reset(seed=seed)
    record = {
        "env_id": env_id,
        "seed": seed,
        "obs": obs,
        "givens": env.initial_grid.flatten().tolist(),
        "solution": env.solution_grid.flatten().tolist(),
    }
    rng = random.Random(seed)
    record["steps"] = peer.step_records(env, lambda: choose(env, rng), steps, FULL_TEXT_STEPS)
    return record


def main(checkout: str) -> None:
    env_module = peer.import_module(checkout, "ragen.env.sudoku.env")
    config_module = peer.import_module(checkout, "ragen.env.sudoku.config")
    records = []
    for env_id, config in CONFIGS.items():
        env = env_module.SudokuEnv(config_module.SudokuEnvConfig(**config))
        long_run = config["max_steps"] + EXTRA_STEPS
        records += [play(env, env_id, seed, long_run if seed < 100 else PANEL_STEPS) for seed in peer.recorded_seeds()]
    path = peer.write_jsonl("sudoku", records, compress=True)
    print(f"{path}: {len(records)} episodes, {sum(len(r['steps']) for r in records)} steps")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
