"""Matches between scripted players, for the strength figures in the game cards.

``scripts/tictactoe_strength.py``, ``scripts/connect_four_strength.py`` and
``scripts/openspiel_strength.py`` print one :func:`match` per pairing.
"""

from __future__ import annotations

import time
from typing import Any


def match(game: Any, player: Any, other: Any, games: int, first_on_even: bool = True) -> dict[str, Any]:
    """Wins, draws and losses of ``player`` against ``other`` over seeds ``0..games-1`` of ``game``.

    ``game`` is a turn-based game's ``env()`` (what PettingZoo users get; the moves go through
    its wrappers) or its raw env; the players read the game under the wrappers.
    Seats alternate: ``player`` moves first on even seeds (``first_on_even``) or on odd ones.
    The seed also drives both players' tie-breaks, so the two seatings give different games.
    ``mean_return`` is ``player``'s reward a game (chips in poker; wins minus losses in the board games).
    """
    raw = game.unwrapped
    tally = {"win": 0, "draw": 0, "loss": 0}
    moves = 0
    earned = 0.0
    start = time.perf_counter()
    for seed in range(games):
        first = (seed % 2 == 0) == first_on_even
        seats = {"player_0": player, "player_1": other} if first else {"player_0": other, "player_1": player}
        mine = "player_0" if first else "player_1"
        game.reset(seed=seed)
        while not raw.game_over:
            agent = raw.agent_selection
            game.step(seats[agent].choose(raw, agent))
            moves += 1
            earned += raw.rewards[mine]
        tally["draw" if raw.winner is None else ("win" if seats[raw.winner] is player else "loss")] += 1
    return {
        "player": player.name, "opponent": other.name, "games": games,
        "player_first_on": "even seeds" if first_on_even else "odd seeds", **tally,
        "mean_moves": round(moves / games, 2), "mean_return": round(earned / games, 3),
        "seconds": round(time.perf_counter() - start, 1),
    }
