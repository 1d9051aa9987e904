"""Measure the Tic-Tac-Toe opponents (the numbers in envs/tictactoe/README.md).

    python -m ragen_bench.games.tictactoe.strength [games per pairing]

Each pairing plays ``games`` games on seeds ``0..games-1`` with alternating seats, as
``python -m ragen_bench.games.connect_four.strength`` does.  ``minimax`` against
``random`` is played both ways round: ``minimax`` first on even seeds (the measured
player's seats there) and first on odd seeds (the seats an opponent takes in
``ragen-bench eval``, where the evaluated agent is ``player_0`` on even seeds).  The
seed also drives both players' tie-breaks (``np_random``), so the two differ a little.
Prints one JSON line per pairing.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from ragen_bench.games.opponents import MinimaxPlayer, RandomPlayer
from ragen_bench.games.tictactoe.env import TicTacToeEnv


def match(player: Any, other: Any, games: int, first_on_even: bool = True) -> dict[str, Any]:
    """Wins, draws and losses of ``player`` against ``other``; ``player`` moves first on even seeds (or odd ones)."""
    game = TicTacToeEnv()
    tally = {"win": 0, "draw": 0, "loss": 0}
    moves = 0
    start = time.perf_counter()
    for seed in range(games):
        first = (seed % 2 == 0) == first_on_even
        seats = {"player_0": player, "player_1": other} if first else {"player_0": other, "player_1": player}
        game.reset(seed=seed)
        while not game.game_over:
            agent = game.agent_selection
            game.step(seats[agent].choose(game, agent))
        moves += len(game.board.moves)
        tally["draw" if game.winner is None else ("win" if seats[game.winner] is player else "loss")] += 1
    return {
        "player": player.name, "opponent": other.name, "games": games,
        "player_first_on": "even seeds" if first_on_even else "odd seeds", **tally,
        "mean_moves": round(moves / games, 2), "seconds": round(time.perf_counter() - start, 1),
    }


def main(argv: list[str]) -> int:
    games = int(argv[0]) if argv else 200
    minimax, random = MinimaxPlayer(), RandomPlayer()
    for first_on_even in (True, False):
        print(json.dumps(match(minimax, random, games, first_on_even)), flush=True)
    print(json.dumps(match(minimax, MinimaxPlayer(), games)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
