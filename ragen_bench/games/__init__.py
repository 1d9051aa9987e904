"""Multi-agent text games on PettingZoo's API (one package per game).

* :mod:`.registry` -- the ids (``RAGEN/TicTacToe-v0`` ...) and :func:`make_multiagent`;
* :mod:`.board` -- the shared AEC machinery of the two turn-based board games;
* :mod:`.tictactoe`, :mod:`.connect_four`, :mod:`.prisoners_dilemma` -- the games;
* :mod:`.opponents` -- the scripted players (minimax, alpha-beta, tit-for-tat, random).

Importing this package (or the registry) does not import PettingZoo; the game
packages do, and need the ``games`` extra (``pip install 'ragen-bench[games]'``).
"""

from ragen_bench.games.registry import GAME_ENTRIES, GAME_IDS, game_entry, make_multiagent

__all__ = ["GAME_ENTRIES", "GAME_IDS", "game_entry", "make_multiagent"]
