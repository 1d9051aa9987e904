"""Measure OpenSpiel's MCTS opponent against random play (the numbers in data/openspiel/README.md).

    python scripts/openspiel_strength.py [games per game] [RAGEN/OS-...-v0 ...]

Each curated game (or the ids given) plays ``games`` games on seeds ``0..games-1``
through the wrapped ``env()`` (:func:`ragen_bench.games.strength.match`), ``mcts`` taking
the first seat on even seeds and the second on odd ones.  Prints one JSON line per game.
"""

from __future__ import annotations

import json
import sys

from ragen_bench.games.opponents import MCTSPlayer, RandomPlayer
from ragen_bench.games.registry import GAME_ENTRIES, game_entry, make_multiagent
from ragen_bench.games.strength import match

OPENSPIEL_IDS = tuple(row.id for row in GAME_ENTRIES if row.family == "openspiel")


def main(argv: list[str]) -> int:
    games = int(argv[0]) if argv else 32
    for env_id in argv[1:] or OPENSPIEL_IDS:
        game_entry(env_id)  # an unknown id is one clear error
        result = match(make_multiagent(env_id), MCTSPlayer(), RandomPlayer(), games)
        print(json.dumps({"env_id": env_id, **result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
