"""Measure the Connect Four opponents against each other (the numbers in envs/connect_four/README.md).

    python -m ragen_bench.games.connect_four.strength [games per pairing]

Each pairing plays ``games`` games on seeds ``0..games-1``, the measured player taking
the first seat on even seeds and the second on odd ones.  Prints one JSON line per pairing.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from ragen_bench.games.connect_four.env import ConnectFourEnv
from ragen_bench.games.opponents import OPPONENTS, RandomPlayer, SearchPlayer


def match(player: Any, other: Any, games: int) -> dict[str, Any]:
    """Wins, draws and losses of ``player`` against ``other`` with alternating seats."""
    game = ConnectFourEnv()
    tally = {"win": 0, "draw": 0, "loss": 0}
    moves = 0
    start = time.perf_counter()
    for seed in range(games):
        seats = {"player_0": player, "player_1": other} if seed % 2 == 0 else {"player_0": other, "player_1": player}
        game.reset(seed=seed)
        while not game.game_over:
            agent = game.agent_selection
            game.step(seats[agent].choose(game, agent))
        moves += len(game.board.moves)
        tally["draw" if game.winner is None else ("win" if seats[game.winner] is player else "loss")] += 1
    return {
        "player": player.name, "opponent": other.name, "games": games, **tally,
        "mean_moves": moves / games, "seconds": round(time.perf_counter() - start, 1),
    }


def main(argv: list[str]) -> int:
    games = int(argv[0]) if argv else 40
    strong = OPPONENTS["connect_four"]["strong"]()
    rivals = [RandomPlayer(), *(SearchPlayer(d, False) for d in (1, 2, 4)), SearchPlayer(4, True)]
    for rival in rivals:
        print(json.dumps(match(strong, rival, games)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
