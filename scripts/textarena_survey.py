"""Which of TextArena 0.7.4's 95 base games run offline and deterministically: the facts behind
ragen_bench/envs/textarena/games.py's tables and docs/textarena.md.

Each game is played in fresh processes (network refused, a time limit each) by a scripted
player whose actions depend only on the text it was shown:

* ``plain`` (isolated) in two processes under different PYTHONHASHSEEDs: the transcripts must be
  identical (cross-process determinism);
* ``isolated`` with the player drawing from ``random`` and numpy between calls: must match too;
* ``global`` (no isolation) with those draws: shows which games the draws would change.

    .venv/bin/python scripts/textarena_survey.py            # every base game, a JSON line each
    .venv/bin/python scripts/textarena_survey.py Wordle-v0  # some games
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import socket
import subprocess
import sys

SEEDS = (3, 11)
MAX_STEPS = 60
TIME_LIMIT_S = 90
_BRACKETED = re.compile(r"\[[^\[\]\n]{1,24}\]")


def _no_network(*args: object, **kwargs: object) -> None:
    raise OSError("network refused by the survey")


def scripted_action(seen: str, step: int) -> str:
    """An action chosen from the bracketed examples in the text so far, by the step number alone."""
    options = sorted(set(_BRACKETED.findall(seen))) or ["[0]"]
    return options[(step * 7919) % len(options)]


def play(game: str, mode: str) -> dict[str, object]:
    """One transcript digest per seed, in this process."""
    import numpy as np

    from ragen_bench.envs.textarena.library import IsolatedRandom, make_game, message_text

    socket.socket.connect = _no_network  # type: ignore[method-assign]
    digests, players, steps = [], None, 0
    for seed in SEEDS:
        rng = IsolatedRandom(seed)
        env = make_game(game, rng if mode != "global" else None)
        call = rng.call if mode != "global" else (lambda fn, *a, **k: fn(*a, **k))
        players = players or _players(env, call, seed)
        call(env.reset, num_players=players, seed=seed)
        transcript, seen = hashlib.sha256(), ""
        for step in range(MAX_STEPS):
            player, messages = call(env.get_observation)
            seen += message_text(messages)
            action = scripted_action(seen, step)
            if mode != "plain":
                random.random(), np.random.rand()  # the agent's own draws between calls
            done, info = call(env.step, action)
            transcript.update(f"{player}|{seen}|{action}|{done}|{info}".encode())
            steps += 1
            if done:
                break
        transcript.update(repr(call(env.close)).encode())
        digests.append(transcript.hexdigest()[:16])
    return {"players": players, "digests": digests, "steps": steps}


def _players(env: object, call: object, seed: int) -> int:
    """The fewest players (1..6) the game accepts."""
    for count in range(1, 7):
        try:
            call(env.reset, num_players=count, seed=seed)  # type: ignore[operator, attr-defined]
            return count
        except Exception:
            continue
    raise RuntimeError("no player count from 1 to 6 accepted")


def _run(game: str, mode: str, hashseed: str) -> dict[str, object]:
    environment = {**os.environ, "PYTHONHASHSEED": hashseed}
    command = [sys.executable, __file__, "--one", game, mode]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIME_LIMIT_S, env=environment)
    except subprocess.TimeoutExpired:
        return {"error": f"no answer within {TIME_LIMIT_S} s (hangs)"}
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["(no output)"]
        # NLTK ends its trace with a banner of stars: the line naming the error is the one to keep.
        named = [line for line in lines if re.match(r"^[\w.]+(Error|Exception|Exit)\b", line)]
        return {"error": (named or lines)[-1][:200]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def survey(game: str) -> dict[str, object]:
    first = _run(game, "plain,isolated,global", "1")
    if "error" in first:
        return {"game": game, "verdict": "error", **first}
    again = _run(game, "plain", "2")
    plain = first["plain"]
    same_process = plain == first["isolated"]
    cross_process = plain == again.get("plain")
    return {
        "game": game,
        "players": plain["players"],
        "verdict": "deterministic" if same_process and cross_process else "nondeterministic",
        "cross_process": cross_process,
        "agent_draws_isolated": same_process,
        "agent_draws_change_it_without_isolation": first["global"] != plain,
        "steps": plain["steps"],
    }


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        # The unisolated mode goes last: it leaves the process's generators drawn from.
        print(json.dumps({mode: play(argv[1], mode) for mode in argv[2].split(",")}))
        return
    from textarena.envs.registration import ENV_REGISTRY

    games = argv or [name for name in ENV_REGISTRY if re.fullmatch(r"[A-Za-z0-9]+-v0", name)]
    for game in games:
        print(json.dumps(survey(game)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
