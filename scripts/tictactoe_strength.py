"""Measure the Tic-Tac-Toe opponents (the numbers in data/tictactoe/README.md).

    python scripts/tictactoe_strength.py [games per pairing]

Each pairing plays ``games`` games on seeds ``0..games-1`` with alternating seats, as
``scripts/connect_four_strength.py`` does, through the wrapped ``env()``
(:func:`ragen_bench.games.strength.match`).  ``minimax`` against ``random`` is played
both ways round: ``minimax`` first on even seeds (the measured player's seats there) and
first on odd seeds (the seats an opponent takes in ``ragen-bench eval``, where the
evaluated agent is ``player_0`` on even seeds).  The seed also drives both players'
tie-breaks (``np_random``), so the two differ a little.  Prints one JSON line per pairing.
"""

from __future__ import annotations

import json
import sys

from ragen_bench.games import tictactoe
from ragen_bench.games.opponents import MinimaxPlayer, RandomPlayer
from ragen_bench.games.strength import match


def main(argv: list[str]) -> int:
    games = int(argv[0]) if argv else 200
    minimax, random = MinimaxPlayer(), RandomPlayer()
    for first_on_even in (True, False):
        print(json.dumps(match(tictactoe.env(), minimax, random, games, first_on_even)), flush=True)
    print(json.dumps(match(tictactoe.env(), minimax, MinimaxPlayer(), games)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
