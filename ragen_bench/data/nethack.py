"""MiniHack's tasks and NetHack (nle 1.3.0, minihack 1.0.2) as frozen data: the ids, their actions,
BALROG's settings for them and its progression table.

Plain data under the id table: ``registry.py`` turns :func:`rows` into ids without importing nle.
Every fact about BALROG comes from balrog-ai/BALROG at commit af7d1f17 (2026-03-16):
``balrog/config/config.yaml`` (tasks, episodes, env arguments), ``balrog/environments/minihack/__init__.py``
(the action names) and ``balrog/environments/nle/achievements.json`` (the progression table).
"""

from __future__ import annotations

from ragen_bench.data.balrog import HISTORY_TURNS

# BALROG's action names -> NetHack's key for the action (nle.nethack.actions): the compass moves
# (vi keys), their "far" runs (capitals), stairs, wait, More, and the commands BALROG offers, in the
# order of nle's action list (BALROG lists a task's actions in that order).
ACTION_KEYS: dict[str, int] = {
    "north": 107, "east": 108, "south": 106, "west": 104,
    "northeast": 117, "southeast": 110, "southwest": 98, "northwest": 121,
    "far north": 75, "far east": 76, "far south": 74, "far west": 72,
    "far northeast": 85, "far southeast": 78, "far southwest": 66, "far northwest": 89,
    "up": 60, "down": 62, "wait": 46, "more": 13,
    "apply": 97, "close": 99, "eat": 101, "force": 230, "kick": 4, "loot": 236, "open": 111,
    "pickup": 44, "pray": 240, "puton": 80, "quaff": 113, "search": 115, "zap": 122,
}
ACTION_MEANINGS: dict[str, str] = {
    **{d: f"move one step {d}" for d in ("north", "east", "south", "west", "northeast", "southeast", "southwest", "northwest")},
    **{f"far {d}": f"run {d} until something interesting" for d in
       ("north", "east", "south", "west", "northeast", "southeast", "southwest", "northwest")},
    "up": "go up the stairs", "down": "go down the stairs", "wait": "rest one move",
    "more": "show the rest of the message", "apply": "apply (use) a tool", "close": "close a door next to you",
    "open": "open a door next to you", "eat": "eat something", "force": "force a lock", "kick": "kick something",
    "loot": "loot a box on the floor", "pickup": "pick up what lies here", "pray": "pray to your god",
    "puton": "put on an accessory", "quaff": "drink something", "search": "search for hidden doors and passages",
    "zap": "zap a wand",
}
_COMPASS = tuple(ACTION_KEYS)[:8]
_FULL = tuple(name for name in ACTION_KEYS if name != "up")  # what MiniHack's Quest levels offer of BALROG's names

# Our task name -> (the library's id, BALROG's goal sentence, the actions it offers by BALROG's
# names, in the library's order).  BALROG's eight MiniHack tasks less its two Boxoban ones (they
# download their levels at run time).
MINIHACK: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "MazeWalk-9x9": ("MiniHack-MazeWalk-9x9-v0", "reach the stairs down at the other end of the maze", _COMPASS),
    "MazeWalk-15x15": ("MiniHack-MazeWalk-15x15-v0", "reach the stairs down at the other end of the maze", _COMPASS),
    "Corridor-R3": ("MiniHack-Corridor-R3-v0", "explore the rooms and corridors and reach the stairs down",
                    (*_COMPASS, "open", "kick", "search")),
    "CorridorBattle-Dark": ("MiniHack-CorridorBattle-Dark-v0",
                            "fight your way through the monsters in the dark corridor and reach the stairs down", _COMPASS),
    "Quest-Easy": ("MiniHack-Quest-Easy-v0", "cross the lava river, fight the monsters and reach the stairs down", _FULL),
    "Quest-Medium": ("MiniHack-Quest-Medium-v0",
                     "find the way through the maze, fight the monsters, cross the lava and reach the stairs down", _FULL),
}
# BALROG's MiniHack arguments (config.yaml minihack_kwargs): 100 steps, -0.01 a step, no autopickup.
MINIHACK_STEPS = 100
# NetHack: BALROG plays NetHackChallenge-v0 (which refuses seeding); NetHackScore-v0 with the
# arguments NetHackChallenge sets plays the same game and takes seeds.  BALROG's nle_kwargs: at
# most 100,000 steps, abort after 150 steps in which the game's clock does not move.
NETHACK_ACTIONS = tuple(ACTION_KEYS)
NETHACK_STEPS = 100_000
NETHACK_NO_PROGRESS = 150
# The chat budget of RAGEN/NetHack-v0: BALROG sets no limit a chat reaches, so ours is this many turns.
NETHACK_TURNS = 1000
# BALROG's tasks, episode counts, history (HISTORY_TURNS) and published rows: ragen_bench/data/balrog.py.

# BALROG's progression table (achievements.json): the share of human games that got no further than
# dungeon level d (index d - 1), and experience level x (index x - 1).  The score is the largest value
# the game reached on either ladder; deeper levels and higher experience are worth more.
DUNGEON_LEVEL_PROGRESSION = (
    0.0, 0.015392269075361172, 0.017539535798967013, 0.021221378364235505, 0.026482449457437766,
    0.035428686118173014, 0.04846098359243788, 0.0695812141543123, 0.09770935198701912, 0.12558597019922987,
    0.1612677822768481, 0.20612854836308672, 0.2566039887664476, 0.29247245425293333, 0.30881240110986263,
    0.3249071349317381, 0.34007883702829594, 0.3526455577544006, 0.3654881095022441, 0.37895667923256743,
    0.39293747679675045, 0.40832255575976223, 0.4258360748858015, 0.445181408701678, 0.46637631565303056,
    0.5067605633802816, 0.5543572044866264, 0.6015648510382184, 0.6465049415992812, 0.6913110342176086,
    0.7101094299371864, 0.7176456494828894, 0.7232124894378948, 0.7284405900470092, 0.7327761924174481,
    0.7368528917489855, 0.7421458943978863, 0.7471321695760599, 0.753731343283582, 0.7610398408061306,
    0.76740810314648, 0.7725338491295938, 0.7771626297577855, 0.7812567949554251, 0.7858986134802957,
    0.7890256738822022, 0.7929718875502008, 0.7967408445768355, 0.8018467495718222, 0.8067964442444019,
)
EXPERIENCE_LEVEL_PROGRESSION = (
    0.0, 0.01847840456172601, 0.02081163581974355, 0.024160136550546978, 0.029108986017138745,
    0.036887590648350246, 0.0507583712345433, 0.07453595273884014, 0.11704996473565571, 0.17909953770432294,
    0.25480449090205187, 0.33264942385807844, 0.41442590519821954, 0.49403949403949404, 0.5778823703813513,
    0.6261221999477034, 0.656281764586298, 0.6810218550418937, 0.7015328516442704, 0.7174494081710576,
    0.7286977843944303, 0.7371004909327723, 0.7443446629532795, 0.7513449678519879, 0.7585537128343045,
    0.7642151855635002, 0.7703376822716808, 0.7759810263044415, 0.7783345263660224, 0.7804561949196475,
)


def progression(depth: int, experience_level: int) -> float:
    """BALROG's progression of one state: the larger table value of its dungeon level and its
    experience level (a level off the table, such as the Planes' negative depths, counts 0)."""
    dungeon = DUNGEON_LEVEL_PROGRESSION[depth - 1] if 1 <= depth <= len(DUNGEON_LEVEL_PROGRESSION) else 0.0
    experience = (EXPERIENCE_LEVEL_PROGRESSION[experience_level - 1]
                  if 1 <= experience_level <= len(EXPERIENCE_LEVEL_PROGRESSION) else 0.0)
    return max(dungeon, experience)


def rows() -> tuple[tuple[dict[str, object], dict[str, object]], ...]:
    """Each id's row (``registry.EnvEntry``'s fields) and chat budget (``ChatBudget``'s)."""
    table = []
    for task, (library_id, goal, _) in MINIHACK.items():
        row = dict(id=f"RAGEN/MiniHack-{task}-v0", family="nethack", entry_point="ragen_bench.envs.nethack:NetHackEnv",
                   kwargs=dict(task=task), extra="nethack",
                   description=f"MiniHack's {library_id} (minihack 1.0.2): {goal}; scored by success.")
        budget = dict(max_turns=MINIHACK_STEPS, max_actions_per_turn=1, max_actions_per_episode=MINIHACK_STEPS,
                      history_window=HISTORY_TURNS,
                      basis="BALROG's MiniHack settings: 100 steps, one a turn, the last 16 steps shown")
        table.append((row, budget))
    row = dict(id="RAGEN/NetHack-v0", family="nethack", entry_point="ragen_bench.envs.nethack:NetHackEnv",
               kwargs=dict(task="NetHack"), extra="nethack",
               description="NetHack 3.6 (nle 1.3.0) as BALROG plays it, seeded; scored by BALROG's progression.")
    budget = dict(max_turns=NETHACK_TURNS, max_actions_per_turn=1, max_actions_per_episode=NETHACK_TURNS,
                  history_window=HISTORY_TURNS,
                  basis=f"{NETHACK_TURNS} steps, one a turn (BALROG's 100,000 are out of a chat's reach), the last 16 shown")
    table.append((row, budget))
    return tuple(table)
