"""Crafter's id as frozen data: its achievements, BALROG's protocol for it, and the id-table row.

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

# BALROG's protocol for Crafter, read from balrog-ai/BALROG (commit af7d1f1): balrog/config/config.yaml
# (eval.num_episodes.crafter, envs.crafter_kwargs, crafter_tasks), balrog/evaluator.py (an episode runs
# for the env's max_steps: the wrapper's max_episode_steps) and balrog/environments/crafter/env.py
# (get_stats: progression = achievements unlocked / 22).  Its seeds are null: no episode is reproducible.
# BALROG's steps an episode: crafter_kwargs.max_episode_steps (crafter's own 10000-step length is never reached).
BALROG_STEPS = 2000
BALROG: dict[str, object] = {
    "source": "balrog-ai/BALROG af7d1f1: balrog/config/config.yaml, balrog/evaluator.py, "
              "balrog/environments/crafter/env.py",
    "tasks": ("default",),
    "episodes": 10,
    "max_steps_per_episode": BALROG_STEPS,
    "crafter_kwargs": {"area": (64, 64), "view": (9, 9), "size": (256, 256), "reward": True, "seed": None},
    "score": "achievements unlocked / 22, in % (get_stats()['progression'] x 100), mean over episodes",
    "history_messages": 16,
    # Published text-track numbers (Crafter, % progression).  Only what a source states: the paper's
    # GPT-4o figure as The Decoder reports it ("only reached 33 percent progress", BALROG v1, 2024-11).
    "published": {"gpt-4o": 33.0},
    "published_source": "arXiv 2411.13543v1 as reported by the-decoder.com (2024-11); exact table values "
                        "and later leaderboard rows (balrogai.com) are not copied here",
}

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
