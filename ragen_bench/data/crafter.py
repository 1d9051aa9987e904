"""Crafter's id as frozen data: its achievements, BALROG's step cap, and the id-table row.

A plain table the registry reads without importing the env package (layers point down).
"""

from __future__ import annotations

# crafter 1.8.3's data.yaml ``achievements``, in its order: the score is the share of these unlocked.
ACHIEVEMENTS: tuple[str, ...] = (
    "collect_coal", "collect_diamond", "collect_drink", "collect_iron", "collect_sapling", "collect_stone",
    "collect_wood", "defeat_skeleton", "defeat_zombie", "eat_cow", "eat_plant", "make_iron_pickaxe",
    "make_iron_sword", "make_stone_pickaxe", "make_stone_sword", "make_wood_pickaxe", "make_wood_sword",
    "place_furnace", "place_plant", "place_stone", "place_table", "wake_up",
)

# BALROG's steps an episode for Crafter (balrog-ai/BALROG af7d1f1, balrog/config/config.yaml
# envs.crafter_kwargs.max_episode_steps; its evaluator stops there, so crafter's own 10000 are never
# reached).  BALROG's other protocol facts and published rows: ragen_bench/data/balrog.py.
BALROG_STEPS = 2000

MAX_STEPS = 10_000  # crafter's own episode length (Env(length=10000))


def rows() -> tuple[tuple[dict[str, object], dict[str, object]], ...]:
    """The id-table row (``registry.EnvEntry``'s fields) and chat budget (``ChatBudget``'s) of ``RAGEN/Crafter-v0``.

    One action a turn and BALROG's 2000 steps an episode (the env itself runs to crafter's 10000).
    """
    steps = BALROG_STEPS
    row = dict(id="RAGEN/Crafter-v0", family="crafter", entry_point="ragen_bench.envs.crafter:CrafterEnv",
               kwargs={}, extra="crafter",
               description="Crafter (crafter 1.8.3): survive and unlock 22 achievements; a text view of the map around you.")
    budget = dict(max_turns=steps, max_actions_per_turn=1, max_actions_per_episode=steps,
                  basis="BALROG's protocol: one action a step, 2000 steps an episode")
    return ((row, budget),)
