"""What a seed decides in a game, written out as text so that panels can pin it.

The rules of the project's own board games hold no chance, so a seed decides three things:

* the seat the evaluated agent takes (:func:`agent_seat`: ``player_<seed mod n>`` of a game of
  ``n`` seats; in two-player games ``player_0``, who moves first, on even seeds), so a panel
  goes round the seats;
* the scripted opponents' tie-breaking generator (``np_random``, seeded by ``reset``);
* in the Prisoner's Dilemma also the hidden number of rounds;
* in the OpenSpiel games (``RAGEN/OS-*``) every chance outcome: the deal (in the first
  views) and the stream later rolls and cards come from (``chance_rng``).

:func:`seed_view` is the text a panel hashes for a seed: all of the above plus every
seat's first text observation.  A change in any of them changes the hash, which
:meth:`ragen_bench.panels.Panel.verify` reports as drift.
"""

from __future__ import annotations

from typing import Any

from ragen_bench.games.registry import game_entry, make_multiagent

# How many of the opponent's tie-break draws a seed view shows (enough to pin the generator).
_DRAWS = 4
# The labels of the lines holding those draws (readers' views leave them out: ragen_bench.catalog).
TIE_BREAK_DRAWS, CHANCE_DRAWS = "tie-break draws:", "chance draws:"


def agent_seat(seed: int, seats: int) -> str:
    """The seat the evaluated agent plays on ``seed`` in a game of ``seats`` seats; opponents take the others."""
    return f"player_{seed % seats}"


def seating(env_id: str, seed: int) -> tuple[str, tuple[str, ...]]:
    """``(the agent's seat, the opponents' seats)`` of game ``env_id`` on ``seed``."""
    seats = game_entry(env_id).seats
    seat = agent_seat(seed, seats)
    return seat, tuple(other for other in (f"player_{index}" for index in range(seats)) if other != seat)


def seed_view(env_id: str, seed: int) -> tuple[str, dict[str, Any]]:
    """``(text, info)`` for ``seed`` (``info`` is empty: no difficulty metadata for games)."""
    row = game_entry(env_id)
    game = make_multiagent(env_id, parallel=row.parallel)
    game.reset(seed=seed)  # read through PettingZoo's wrappers, which pass attributes on
    lines = [f"env: {env_id}", f"seed: {seed}", f"agent seat: {agent_seat(seed, row.seats)}"]
    if row.parallel:
        lines.append(f"rounds: {game.rounds}")
    for agent in game.possible_agents:
        lines += [f"--- first view of {agent}", game.text_observation(agent)]
    draws = game.np_random.integers(0, 2**31, size=_DRAWS)
    lines.append(f"{TIE_BREAK_DRAWS} {' '.join(str(int(d)) for d in draws)}")
    chance = getattr(game, "chance_rng", None)
    if chance is not None:  # OpenSpiel games: the stream every later chance outcome (roll, card) comes from
        lines.append(f"{CHANCE_DRAWS} {' '.join(str(int(d)) for d in chance.integers(0, 2**31, size=_DRAWS))}")
    return "\n".join(lines) + "\n", {}
