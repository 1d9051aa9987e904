"""Success by optimal solution length (1, 2, 3, >= 4 moves) of eval run directories, paired.

    python baselines/cpu-sokoban-protocol/by_length.py START_RUN TRAINED_RUN [START_RUN TRAINED_RUN ...]

prints, for each pair, the levels of each length and how many each model solved.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

BUCKETS = ("1", "2", "3", ">=4")


def episodes(run: Path) -> dict[tuple[int, int], dict]:
    path = run / "episodes.jsonl"
    text = path.read_text() if path.exists() else gzip.decompress((run / "episodes.jsonl.gz").read_bytes()).decode()
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return {(row["seed"], row["sample"]): row for row in rows}


def bucket(length: int) -> str:
    return BUCKETS[min(length, 4) - 1]


def main(runs: list[str]) -> None:
    if len(runs) < 2 or len(runs) % 2:
        sys.exit("give pairs of run directories: START TRAINED [START TRAINED ...]")
    print("| pair | " + " | ".join(f"{b} moves" for b in BUCKETS) + " |")
    print("|---|" + "---|" * len(BUCKETS))
    for start_dir, trained_dir in zip(runs[::2], runs[1::2]):
        start, trained = episodes(Path(start_dir)), episodes(Path(trained_dir))
        cells = []
        for name in BUCKETS:
            keys = [key for key, row in start.items() if bucket(row["optimal_length"]) == name and key in trained]
            cells.append(f"{sum(start[k]['success'] for k in keys)} → {sum(trained[k]['success'] for k in keys)}"
                         f" of {len(keys)}")
        print(f"| {Path(trained_dir).name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
