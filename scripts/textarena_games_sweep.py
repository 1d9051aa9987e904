"""How TextArena's game ids play with the scripted ``random`` opponent in every seat: the last column of
docs/textarena.md's table (moves, refused moves, how each game ended).

Each game runs in a fresh process, the network refused, with a time limit; seeds 0 and 1.

    .venv/bin/python scripts/textarena_games_sweep.py              # every game id (2 to 6 seats), a JSON line each
    .venv/bin/python scripts/textarena_games_sweep.py Nim-v0       # some games
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

SEEDS = (0, 1)
TIME_LIMIT_S = 120


def _no_network(*args: object, **kwargs: object) -> None:
    raise OSError("network refused by the sweep")


def play(game: str) -> dict[str, object]:
    """Every seat played by the ``random`` opponent, in this process: per seed (moves, refused, winner, truncated, end)."""
    from ragen_bench.games.opponents import TextMovePlayer
    from ragen_bench.games.textarena.env import raw_env

    socket.socket.connect = _no_network  # type: ignore[method-assign]
    started, env, player, games = time.perf_counter(), raw_env(game=game), TextMovePlayer(), []
    for seed in SEEDS:
        env.reset(seed=seed)
        moves = refused = 0
        while not env.game_over:
            seat = env.agent_selection
            env.step(player.choose(env, seat))
            moves, refused = moves + 1, refused + env.infos[seat]["move_refused"]
        games.append([moves, refused, env.winner, any(env.truncations.values()), env.ending[:60]])
    return {"game": game, "seconds": round(time.perf_counter() - started, 2), "games": games}


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        print(json.dumps(play(argv[1])))
        return
    from ragen_bench.games.textarena.games import SEATS

    for game in argv or SEATS:
        try:
            done = subprocess.run([sys.executable, __file__, "--one", game], capture_output=True, text=True,
                                  timeout=TIME_LIMIT_S)
            lines = done.stdout.strip().splitlines()
            result = json.loads(lines[-1]) if done.returncode == 0 and lines else {
                "game": game, "error": (done.stderr.strip().splitlines() or ["(no output)"])[-1][:200]}
        except subprocess.TimeoutExpired:
            result = {"game": game, "error": f"no answer within {TIME_LIMIT_S} s (hangs)"}
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
