"""The curated OpenSpiel games: how each is loaded, explained to an LLM and shown to one seat.

Plain data and small pure functions over a ``pyspiel.State``; the env
(:mod:`ragen_bench.games.openspiel.env`) does the rest.  A game's entry is part of its
id's promise: a change to its parameters, instruction or view needs a new version suffix.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

KUHN_CARDS = ("Jack", "Queen", "King")
# Leduc's six cards are numbered 0..5; two suits, so a card's rank is its number // 2.
LEDUC_RANKS = ("Jack", "Jack", "Queen", "Queen", "King", "King")


def board_view(state: Any, player: int) -> str:
    """Perfect-information games: OpenSpiel's own observation string (the board as text)."""
    return state.observation_string(player).rstrip("\n")


def public_moves(state: Any, name: Callable[[int], str]) -> str:
    """The seats' moves so far, in order (chance outcomes left out: they may be private)."""
    moves = [f"player_{step.player} {name(step.action)}" for step in state.full_history() if step.player >= 0]
    return f"Moves so far: {', '.join(moves) if moves else 'none'}."


def kuhn_view(state: Any, player: int) -> str:
    card = int(state.information_state_string(player)[0])
    return f"Your card: {KUHN_CARDS[card]}."


def leduc_view(state: Any, player: int) -> str:
    # Leduc's information state string tags its fields: [Private: 3] [Round 2] ... [Public: 4].
    fields = dict(re.findall(r"\[(\w+):? ([^\]]*)\]", state.information_state_string(player)))
    lines = [f"Your card: {LEDUC_RANKS[int(fields['Private'])]}."]
    if "Public" in fields:
        lines.append(f"Public card: {LEDUC_RANKS[int(fields['Public'])]}.")
    lines.append(f"Round {fields['Round']}; pot {fields['Pot']}; chips left (player_0 player_1): {fields['Money']}.")
    return "\n".join(lines)


@dataclass(frozen=True)
class OpenSpielGameSpec:
    """One curated game.

    ``name`` and ``params`` load it (``pyspiel.load_game(name, params)``); ``seats`` says
    what each seat plays; ``view(state, player)`` is the seat's private or board text;
    ``history``: show the public move list (imperfect-information games, whose own
    strings are not readable); ``mover_tag`` is a regex cut from OpenSpiel's action
    strings where they name the mover (so one name serves both seats).
    """

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    instruction: str = ""
    seats: tuple[str, str] = ("", "")
    view: Callable[[Any, int], str] = board_view
    history: bool = False
    mover_tag: str = ""
    perfect_information: bool = True


GAMES: dict[str, OpenSpielGameSpec] = {
    "kuhn_poker": OpenSpielGameSpec(
        "kuhn_poker",
        instruction=(
            "You are playing Kuhn poker against one opponent. The deck has three cards: Jack, Queen, King. "
            "Each player antes 1 chip and gets one card, seen only by its owner. player_0 acts first. "
            "Pass puts no chip in (or folds facing a bet); Bet puts one more chip in (or calls a bet). "
            "If nobody folds, the higher card takes the pot. Answer with one legal move: Pass or Bet."
        ),
        seats=("you act first", "you act second"),
        view=kuhn_view, history=True, perfect_information=False,
    ),
    "leduc_poker": OpenSpielGameSpec(
        "leduc_poker",
        instruction=(
            "You are playing Leduc poker against one opponent. The deck has six cards: two Jacks, two "
            "Queens, two Kings. Each player antes 1 chip and gets one private card. There are two betting "
            "rounds (raises of 2 chips in round 1, 4 in round 2, at most two raises a round); after round 1 "
            "one public card is shown. Fold gives up the pot, Call matches the bet (or checks), Raise raises. "
            "At the showdown a private card that pairs the public card wins, otherwise the higher card; "
            "equal ranks split the pot. Answer with one legal move: Fold, Call or Raise."
        ),
        seats=("you act first each round", "you act second each round"),
        view=leduc_view, history=True, perfect_information=False,
    ),
    "pig": OpenSpielGameSpec(
        "pig", {"winscore": 20, "horizon": 100},
        instruction=(
            "You are playing Pig, a dice game, against one opponent; the first to bank 20 points wins. "
            "On your turn, roll a die as often as you like: each roll adds its value to your turn total, "
            "but a 1 loses the turn total and ends your turn. stop banks the turn total into your score "
            "and ends your turn. The game ends in a draw after 100 moves. Answer with one legal move: roll or stop."
        ),
        seats=("you move first", "you move second"),
    ),
    "nim": OpenSpielGameSpec(
        "nim",
        instruction=(
            "You are playing misere Nim against one opponent: four piles hold 1, 3, 5 and 7 objects. "
            "On your move, take one or more objects from one pile. Whoever takes the last object loses. "
            "The board shows (the player on move): then the pile sizes. A move is written like "
            "'pile:2, take:3;' (pile numbers start at 1). Answer with one legal move."
        ),
        seats=("you move first", "you move second"),
    ),
    "dots_and_boxes": OpenSpielGameSpec(
        "dots_and_boxes", {"num_rows": 2, "num_cols": 2},
        instruction=(
            "You are playing Dots and Boxes on a grid of 2x2 boxes (3x3 dots) against one opponent. On your "
            "move, draw one undrawn line. Completing the fourth side of a box scores that box and you move "
            "again. Whoever scores more boxes wins. A line is named (h,row,col) for a horizontal line "
            "(row 0..2 from the top, col 0..1) or (v,row,col) for a vertical line (row 0..1, col 0..2). "
            "Answer with one legal line."
        ),
        seats=("1 on the board, you move first", "2 on the board, you move second"),
        mover_tag=r"^P\d",
    ),
    "hex": OpenSpielGameSpec(
        "hex", {"board_size": 5},
        instruction=(
            "You are playing Hex on a 5x5 rhombus of hexagonal cells against one opponent. Players take turns "
            "putting a stone on an empty cell; stones never move. x wins by connecting row 1 (top) to row 5 "
            "(bottom); o wins by connecting column a (left) to column e (right). Cells are named by column "
            "letter and row number, e.g. c3 is the centre. Answer with one empty cell."
        ),
        seats=("you play x, move first and connect top to bottom", "you play o, move second and connect left to right"),
    ),
    "othello": OpenSpielGameSpec(
        "othello",
        instruction=(
            "You are playing Othello (Reversi) on an 8x8 board against one opponent. Black (x) moves first, "
            "then White (o). Place a disc so that it outflanks at least one line of the opponent's discs; "
            "the outflanked discs turn to your colour. If you cannot do so you must pass. When neither can "
            "move, the player with more discs wins. Squares are named by column letter and row number, "
            "e.g. d3. Answer with one legal move."
        ),
        seats=("you play Black (x) and move first", "you play White (o) and move second"),
    ),
    "clobber": OpenSpielGameSpec(
        "clobber", {"rows": 4, "columns": 4},
        instruction=(
            "You are playing Clobber on a 4x4 board filled with stones in a checkerboard pattern, against "
            "one opponent. On your move, move one of your stones onto an orthogonally adjacent square holding "
            "an opponent's stone, which is removed. A player who cannot move loses. A move is written as the "
            "from-square then the to-square, e.g. b4c4. Answer with one legal move."
        ),
        seats=("you play o and move first", "you play x and move second"),
    ),
}
