"""BabyAI's ids: which minigrid 3.2.0 levels, what each asks, and the chat budget's turns.

A plain table the registry reads without importing the env package (layers point down).
"""

from __future__ import annotations

# Our level name -> (minigrid's level class in minigrid.envs.babyai, the task, the chat budget's turns).
# One level per BALROG BabyAI task: BALROG plays the babyai-text fork's MixedTrainLocal split by
# instruction kind (goto, pickup, open, putnext, pick up then go to); these are minigrid's own
# single-room levels of the first four kinds (no minigrid level poses the fifth).  The turns are the
# optimal agent's longest test-panel win (one action a turn, BabyAIBot driving).
LEVELS: dict[str, tuple[str, str, int]] = {
    "GoToLocal": ("GoToLocal", "go to an object in one room", 24),
    "PickupLoc": ("PickupLoc", "pick up an object, maybe named by its place", 15),
    "UnlockLocal": ("UnlockLocal", "fetch the key and open the locked door", 26),
    "PutNextLocal": ("PutNextLocal", "put an object next to another", 35),
}
