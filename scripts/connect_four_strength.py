"""Measure the Connect Four opponents against each other (the numbers in data/connect_four/README.md).

    python scripts/connect_four_strength.py [games per pairing]

Each pairing plays ``games`` games on seeds ``0..games-1`` through the wrapped ``env()``
(:func:`ragen_bench.games.strength.match`), the measured player taking the first seat on
even seeds and the second on odd ones.  Prints one JSON line per pairing.
"""

from __future__ import annotations

import json
import sys

from ragen_bench.games import connect_four
from ragen_bench.games.opponents import OPPONENTS, RandomPlayer, SearchPlayer
from ragen_bench.games.strength import match


def main(argv: list[str]) -> int:
    games = int(argv[0]) if argv else 40
    strong = OPPONENTS["connect_four"]["strong"]()
    rivals = [RandomPlayer(), *(SearchPlayer(d, False) for d in (1, 2, 4)), SearchPlayer(4, True)]
    for rival in rivals:
        print(json.dumps(match(connect_four.env(), strong, rival, games)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
