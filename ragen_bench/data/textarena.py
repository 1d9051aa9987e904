"""TextArena 0.7.4's games as frozen data: which are ids (with each one's move limit), which are left out and why.

Kept as plain data under the id table (``registry.py`` turns :data:`SINGLE_PLAYER` into rows),
so registering the ids imports nothing of TextArena.  The facts come from
``scripts/textarena_survey.py`` (every base game played in fresh processes, network refused,
with and without the agent drawing random numbers between calls); docs/textarena.md lists them.
A new TextArena version is a new table (and new id versions where deals change), never an edit.
"""

from __future__ import annotations

# Single-player games that run offline and give the same episode for a seed in every process,
# with TextArena's own limit on the game's moves (0: the game sets none).
SINGLE_PLAYER: dict[str, int] = {
    "2048-v0": 0, "Bandit-v0": 20, "Blackjack-v0": 0, "Countdown-v0": 12, "Crosswords-v0": 30, "Cryptarithm-v0": 100,
    "FifteenPuzzle-v0": 200, "FrozenLake-v0": 100, "GuessTheNumber-v0": 10, "LightsOut-v0": 20,
    "LogicPuzzle-v0": 30, "Mastermind-v0": 20, "Minesweeper-v0": 100, "PegJump-v0": 0, "RushHour-v0": 0,
    "Secretary-v0": 5, "Set-v0": 20, "Slitherlink-v0": 200, "Sokoban-v0": 30, "Sudoku-v0": 100,
    "ThreeCardMonte-v0": 0, "TowerOfHanoi-v0": 14,
}
# The chat budget of a game TextArena sets no limit on: this many moves (one a turn).
OPEN_GAME_MOVES = 200

_NLTK = "needs an NLTK corpus download at run time (words / tagger), which an offline install lacks"
_JUDGE = "needs an LLM judge or opponent through OpenRouter (network and an API key)"
_PY312 = "needs Python 3.12: its module does not parse under Python 3.11"

# Base games that are not ids here, each with why (checked by scripts/textarena_survey.py).
LEFT_OUT: dict[str, str] = {
    **dict.fromkeys(("Hangman-v0", "WordLadder-v0", "Wordle-v0", "WordSearch-v0",
                     "SpellingBee-v0", "DontSayIt-v0", "Codenames-v0", "LetterAuction-v0", "WordChains-v0"), _NLTK),
    **dict.fromkeys(("GuessWho-v0", "TwentyQuestions-v0", "Debate-v0", "ScenarioPlanning-v0"), _JUDGE),
    **dict.fromkeys(("Checkers-v0", "Chess-v0", "IteratedStagHunt-v0", "Klondike-v0", "ReverseTicTacToe-v0",
                     "UltimateTexasHoldem-v0"), _PY312),
    "BabyAiText-v0": "needs the old `gym` package (and BabyAI), which TextArena does not declare",
    "SpiteAndMalice-v0": "broken in 0.7.4: 'TwoPlayerState' object has no attribute 'logs'",
    "Stratego-v0": "hangs: no answer within 90 s",
    "UsedCarNegotiation-v0": "broken in the 0.7.4 wheel: its data file instructions/blue_book.txt is missing",
    "ScorableGames-v0": "broken in the 0.7.4 wheel: its games_descriptions/base folder is missing",
    "CharacterConclave-v0": "broken in 0.7.4: it calls State.add_observation without observation_type",
    "PublicGoodsGame-v0": ("hangs with 2, 3 or 4 players: after refused moves TextArena's own turn loop "
                           "(FFAMultiPlayerState.step) never returns"),
}
# Games of three to six seats (their number), ids as the two-player games are (ragen_bench/games/textarena/):
# all ran offline and deterministically under isolation (the survey).
MANY_PLAYERS: dict[str, int] = {
    "Taboo-v0": 4, "ThreePlayerTicTacToe-v0": 3, "ThreePlayerGOPS-v0": 3, "ThreePlayerIPD-v0": 3,
    "SettlersOfCatan-v0": 4, "SecretMafia-v0": 6,
}


def rows() -> tuple[tuple[dict[str, object], dict[str, object]], ...]:
    """Each single-player game's id-table row (``registry.EnvEntry``'s fields) and chat budget (``ChatBudget``'s).

    One move a turn (TextArena takes one move a step), as many turns as the game's move limit.
    """
    table = []
    for game, limit in SINGLE_PLAYER.items():
        name = game.removesuffix("-v0")
        row = dict(id=f"RAGEN/TA-{name}-v0", family="textarena", entry_point="ragen_bench.envs.textarena:TextArenaEnv",
                   kwargs=dict(game=game), extra="textarena",
                   description=f"TextArena's {name} at its own settings, its random state isolated.")
        moves = limit or OPEN_GAME_MOVES
        basis = "TextArena's own limit on the game's moves" if limit else f"{moves} moves: TextArena sets no limit"
        table.append((row, dict(max_turns=moves, max_actions_per_turn=1, max_actions_per_episode=moves, basis=basis)))
    return tuple(table)

# Two-player games that run offline and give the same game for a seed in every process (survey), as
# PettingZoo games ``RAGEN/TA-<Game>-v0`` (ragen_bench/games/textarena/).  Candidates are checked by
# tests/test_textarena_games.py; those a random-ish game cannot play through are in LEFT_OUT_GAMES.
TWO_PLAYER: tuple[str, ...] = (
    "Alquerque-v0", "Battleship-v0", "Breakthrough-v0", "Briscola-v0", "Chopsticks-v0", "ColonelBlotto-v0",
    "ConnectFour-v0", "Crusade-v0", "GameOfPureStrategy-v0", "GermanWhist-v0", "Golf-v0", "HighSociety-v0",
    "IndianPoker-v0", "IteratedMatchingPennies-v0", "IteratedPrisonersDilemma-v0", "IteratedRockPaperScissors-v0",
    "IteratedTwoThirdsAverage-v0", "KuhnPoker-v0", "LinesOfAction-v0", "MemoryGame-v0", "Nim-v0", "Othello-v0",
    "PigDice-v0", "QuantumTicTacToe-v0", "SimpleBlindAuction-v0", "SimpleNegotiation-v0", "SimpleTak-v0", "Tak-v0",
    "TicTacToe-v0", "TruthAndDeception-v0", "TwoDollar-v0", "UltimateTicTacToe-v0", "IteratedUltimatumGame-v0",
    "WildTicTacToe-v0", "Snake-v0", "Surround-v0", "LiarsDice-v0", "Poker-v0",
    "MarketEntryGame-v0", "SantoriniBaseFixed-v0", "NewRecruit-v0",
)
# A game stops (truncated, no winner) once a seat has made this many moves and TextArena goes on.
SEAT_MOVES = 100
