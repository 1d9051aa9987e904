"""TextWorld's games as frozen data: BALROG's three game types, which frozen games each split holds, BALROG's step cap.

A plain table the registry reads without importing the env package (layers point down).  The
games themselves are files generated once by ``scripts/textworld_games.py`` (textworld 1.7.0,
PYTHONHASHSEED=0) under data/textworld/games/, checksummed in its manifest.json.
"""

from __future__ import annotations

# Our type name -> (textworld's challenge, its tw-make arguments, objective names only the last
# action, what the game asks, BALROG's task name).  The settings are those of the games BALROG
# plays (made by intelligent-go-explore's textworld/misc/make_{treasure,cooking,coin}.py):
# treasure hunter level 30 (20 rooms, a 20-action quest), the cooking game with 5 ingredients to
# find in 12 rooms with every skill on, coin collector level 220 (40 rooms with distractors, the
# coin 20 moves away).
GAME_TYPES: dict[str, tuple[str, tuple[str, ...], bool, str, str]] = {
    "TreasureHunter": ("tw-treasure_hunter", ("--level", "30"), True,
                       "find the named object in a 20-room house of locked doors and containers", "treasure_hunter"),
    "Cooking": ("tw-cooking", ("--recipe", "5", "--take", "5", "--go", "12", "--open", "--cook", "--cut",
                               "--split", "test"), False,
                "find the recipe and its 5 ingredients, cut and cook them, prepare and eat the meal",
                "the_cooking_game"),
    "CoinCollector": ("tw-coin_collector", ("--level", "220"), True,
                      "find the coin in a 40-room maze with dead ends", "coin_collector"),
}

# BALROG keeps only the treasure hunters whose walkthrough is this long (make_treasure.py: level 30
# sometimes finds a shorter quest); scripts/textworld_games.py skips the other seeds.
WALKTHROUGH_LENGTH = {"TreasureHunter": 20}

# The tw-make seeds of each type's frozen games, by split (a seed is a game: the env's seed is its
# tw-make seed).  Test holds BALROG's 10 episodes a type; val and train a few (a treasure hunter
# takes minutes to generate, and every game ships in the wheel).  Treasure hunters: the first seeds
# from 123, 1000 and 10000 up whose walkthrough is 20 commands; seeds 125, 132, 1001, 1003, 10000-10002
# and 10004 gave shorter quests (skipped, as BALROG skips them), and 128, 133 and 135 were still
# searching for a quest after 20 minutes when generation stopped (left out).
_PLAIN = {"test": tuple(range(123, 133)), "val": (1000, 1001), "train": (10000, 10001)}
SPLITS: dict[str, dict[str, tuple[int, ...]]] = {
    "TreasureHunter": {"test": (123, 124, 126, 127, 129, 130, 131, 134, 136, 137), "val": (1000, 1002),
                       "train": (10003, 10005)},
    "Cooking": _PLAIN,
    "CoinCollector": _PLAIN,
}

# BALROG's steps an episode, for every TextWorld task (balrog-ai/BALROG balrog/config/config.yaml,
# textworld_kwargs.max_episode_steps).  Its tasks, episode counts, history and published rows:
# ragen_bench/data/balrog.py.
BALROG_STEPS = 80


def rows() -> tuple[tuple[dict[str, object], dict[str, object]], ...]:
    """Each game type's id-table row (``registry.EnvEntry``'s fields) and chat budget (``ChatBudget``'s)."""
    table = []
    for kind, (_, _, _, what, task) in GAME_TYPES.items():
        row = dict(id=f"RAGEN/TextWorld-{kind}-v0", family="textworld", entry_point="ragen_bench.envs.textworld:TextWorldEnv",
                   kwargs=dict(game_type=kind), extra="textworld",
                   description=f"BALROG's TextWorld task {task}: {what}; frozen games (textworld 1.7.0).")
        basis = "BALROG's 80 steps, the env's own step cap, one command a turn as BALROG plays"
        turns = BALROG_STEPS
        table.append((row, dict(max_turns=turns, max_actions_per_turn=1, max_actions_per_episode=turns, basis=basis)))
    return tuple(table)
