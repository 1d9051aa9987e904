"""Every id declares the chat budget its tasks need (issue 34): ``registry.ChatBudget``.

* an id beyond RAGEN's set: under its declared budget (nothing declared: the chat defaults) the
  optimal agent wins every test-panel episode it wins with turns and actions unbounded, and a
  budget it declares is needed (the defaults lose such an episode) and no larger than needed;
* an id that reproduces a RAGEN config declares RAGEN's rollout budget, as read from RAGEN's
  configs; where that budget makes the optimal agent lose, the loss is pinned here and stated on
  the card;
* every card shows its ids' budgets, and eval's settings put the user's overrides over the budget.

The default run plays a sample of each test panel (the first seeds, plus the seeds of the longest
wins a measured budget was taken from) and of reasoning-gym's ids; RAGEN_BENCH_FULL_SWEEPS=1 plays
every test seed of every id.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import gymnasium
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench import catalog, panels, registry
from ragen_bench.agents.scripted import play_optimal, unbounded
from ragen_bench.chat.config import ChatConfig, budgeted_settings, check_chat
from ragen_bench.registry import ENTRIES, ChatBudget, chat_budget, entry
from tests.conftest import REPO_ROOT
from tests.env_contract import env_class

FULL_SWEEPS = os.environ.get("RAGEN_BENCH_FULL_SWEEPS") == "1"
# Test seeds played per id in the default run (the full sweep plays the whole panel).
SAMPLE = 8
SAMPLE_BY_FAMILY = {"textworld_express": 4, "game_2048": 1, "reasoning_gym": 2}
# reasoning-gym's ids all end at one answer, and some take seconds to generate an item: the default
# run plays these (cheap, across the categories, with those whose reference answer can lose).
RG_SAMPLE = tuple(f"RAGEN/RG-{name}-v0" for name in (
    "ab", "basic_arithmetic", "chain_sum", "graph_color", "maze", "mini_sudoku", "palindrome_partitioning",
    "propositional_logic", "syllogism", "tower_of_hanoi",
))
# The ids with no reference agent (has_reference_agent is False: TextArena's, Crafter, NetHack) have no
# optimal agent to play under their budget: theirs are the library's own move limit (tests/test_textarena.py)
# and BALROG's step caps (tests/test_crafter.py, tests/test_nethack.py).
NO_REFERENCE_AGENT = tuple(row.id for row in ENTRIES if not env_class(row.id).has_reference_agent)
PLAYED_IDS = [
    env_id for env_id in registry.ENV_IDS
    if (FULL_SWEEPS or not env_id.startswith("RAGEN/RG-") or env_id in RG_SAMPLE) and env_id not in NO_REFERENCE_AGENT
]

# RAGEN's rollout budget of each id that reproduces a RAGEN config: (max_turn, max_actions_per_turn,
# max_actions_per_traj, max_context_window or None, response_length), read from RAGEN v1 (RAGEN-AI/RAGEN
# 5eb79b8) and RAGEN-2 (mll-lab-nu/RAGEN 20daedc): config/base.yaml's agent_proxy and rollout, the
# experiment file (_1_bandit, _8_sudoku, _9_2048, _10_rubikscube) and envs.yaml's tag.
V1, R2 = (5, 5, 10, None, 400), (5, 2, 10, None, 400)
RAGEN_BUDGETS = {
    "RAGEN/Sokoban-6x6-v0": V1,
    "RAGEN/Sokoban-8x8-v0": V1,
    "RAGEN/Sokoban-6x6-AltVocab-v0": V1,
    "RAGEN/Sokoban-6x6-Coord-v0": R2,
    "RAGEN/Sokoban-6x6-Visual-v0": R2,
    "RAGEN/FrozenLake-4x4-v0": V1,
    "RAGEN/FrozenLake-4x4-R2-v0": R2,
    "RAGEN/FrozenLake-4x4-Coord-v0": R2,
    "RAGEN/FrozenLake-4x4-Coord-NoSlip-v0": R2,
    "RAGEN/Bandit-v0": (1, 1, 1, None, 500),
    "RAGEN/BanditTest-v0": (1, 1, 1, None, 500),
    "RAGEN/Bandit-R2-v0": (1, 1, 1, None, 500),
    "RAGEN/BanditTest-R2-v0": (1, 1, 1, None, 500),
    "RAGEN/RubiksCube-2x2-Depth1-v0": (25, 4, 20, 5, 500),
    "RAGEN/2048-v0": (800, 1, 700, 5, 256),
    "RAGEN/Sudoku-9x9-Easy-v0": (5, 2, 20, None, 400),
    "RAGEN/Sudoku-9x9-Medium-v0": (5, 2, 30, None, 400),
}
# Episodes of the default run's sample that RAGEN's budget loses though the optimal agent wins them
# unbounded (whole test panels: the cards' "Chat budget" sections).  Every other id loses none.
RAGEN_SHORTFALL = {
    "RAGEN/FrozenLake-4x4-v0": 5,
    "RAGEN/FrozenLake-4x4-R2-v0": 2,
    "RAGEN/FrozenLake-4x4-Coord-v0": 2,
    "RAGEN/Sudoku-9x9-Easy-v0": 8,
    "RAGEN/Sudoku-9x9-Medium-v0": 8,
}
RAGEN_SHORTFALL_FULL = {
    "RAGEN/Sokoban-8x8-v0": 3,
    "RAGEN/FrozenLake-4x4-v0": 113,
    "RAGEN/FrozenLake-4x4-R2-v0": 19,
    "RAGEN/FrozenLake-4x4-Coord-v0": 19,
    "RAGEN/Sudoku-9x9-Easy-v0": 256,
    "RAGEN/Sudoku-9x9-Medium-v0": 256,
}
# Measured budgets: the test seeds of the optimal agent's longest unbounded win (most turns, most
# actions), which set the declared numbers; the default run plays them too.
LONGEST_WINS = {
    "RAGEN/Sokoban-10x10-v0": (185,),  # 63 actions in 13 turns
    "RAGEN/TWX-cookingworld-v0": (20144,),  # 100 actions, TWX's cap
    "RAGEN/TWX-twc-v0": (20408,),  # 32
    "RAGEN/TWX-coin-v0": (20440,),  # 36
    "RAGEN/TWX-mapreader-v0": (20000,),  # 13
    "RAGEN/TWX-sorting-v0": (20000,),  # 10
    "RAGEN/TWX-peckingorder-v0": (20000,),  # 9
    "RAGEN/BabyAI-GoToLocal-v0": (217,),  # 24 actions, one a turn
    "RAGEN/BabyAI-PickupLoc-v0": (250,),  # 15
    "RAGEN/BabyAI-UnlockLocal-v0": (362,),  # 26
    "RAGEN/BabyAI-PutNextLocal-v0": (217,),  # 35
    "RAGEN/RG-tower_of_hanoi-v0": (126,),  # a 4136-character reply
    "RAGEN/RG-palindrome_partitioning-v0": (136,),  # 6681
}
# Budgets set by the env's own step cap (slips make the number of moves a win takes random).
# TextWorld's: BALROG's 80 steps, one command a turn (the walkthroughs' longest test wins: 20, 75, 20).
ENV_CAPPED = ("RAGEN/FrozenLake-8x8-v0", *(row.id for row in ENTRIES if row.family == "textworld"))


def _seeds(env_id: str) -> list[int]:
    seeds = panels.load(env_id, "test").seeds
    if FULL_SWEEPS:
        return list(seeds)
    count = SAMPLE_BY_FAMILY.get(entry(env_id).family, SAMPLE)
    return sorted({*seeds[:count], *LONGEST_WINS.get(env_id, ())})


def _require(env_id: str) -> None:
    hint = catalog.missing_extra(env_id)
    if hint is not None:
        pytest.skip(hint)


_ENVS: dict[str, gymnasium.Env] = {}


def _wins(env_id: str, config: ChatConfig, seeds: list[int]) -> set[int]:
    """The seeds the optimal agent wins; one env per id for the whole module (TWX's each start a JVM)."""
    if env_id not in _ENVS:
        _ENVS[env_id] = gymnasium.make(env_id)
    played = play_optimal(env_id, config, seeds, env=_ENVS[env_id])
    return {trajectory.seed for trajectory in played if trajectory.success}


def teardown_module() -> None:
    for env in _ENVS.values():
        env.close()


def declared_config(env_id: str) -> ChatConfig:
    return check_chat(budgeted_settings(env_id))


# -- the declarations -------------------------------------------------------------------------------


def test_every_ragen_id_declares_ragens_rollout_budget():
    ragen_ids = {row.id for row in ENTRIES if row.ragen_name is not None}
    assert ragen_ids == set(RAGEN_BUDGETS)
    for env_id, (turns, per_turn, per_episode, window, tokens) in RAGEN_BUDGETS.items():
        budget = chat_budget(env_id)
        declared = (budget.max_turns, budget.max_actions_per_turn, budget.max_actions_per_episode)
        assert declared == (turns, per_turn, per_episode), env_id
        assert (budget.history_window, budget.max_new_tokens) == (window, tokens), env_id
        assert "RAGEN" in budget.basis and "config/" in budget.basis, env_id


def test_ids_beyond_ragen_declare_no_reply_tokens():
    # No measurement says how many tokens a model needs: beyond RAGEN's ids, the agent's own limit
    # applies (an id of the same task as a RAGEN id takes that id's budget whole: SAME_TASK).
    for row in ENTRIES:
        if row.ragen_name is None and row.id not in SAME_TASK:
            assert row.chat_budget.max_new_tokens is None, row.id


def test_a_budget_takes_positive_ints_and_says_its_basis():
    assert ChatBudget().declared() == {} and registry.NO_BUDGET == ChatBudget()
    for bad in (0, -1, True, 2.0, "5"):
        with pytest.raises(ValueError, match="max_turns must be an int >= 1 or None"):
            ChatBudget(max_turns=bad, basis="x")
    with pytest.raises(ValueError, match="says its basis"):
        ChatBudget(max_turns=3)
    with pytest.raises(ValueError, match="says its basis"):
        ChatBudget(basis="nothing declared")
    budget = ChatBudget(max_turns=3, max_new_tokens=64, basis="x")
    assert budget.declared() == {"max_turns": 3, "max_new_tokens": 64}
    assert budget.chat_fields() == {"max_turns": 3}


def test_budget_fields_are_chat_config_fields_and_the_agents_reply_tokens():
    chat_fields = {field.name for field in dataclasses.fields(ChatConfig)}
    assert set(registry.BUDGET_FIELDS) - chat_fields == {"max_new_tokens"}


def test_every_declared_budget_makes_a_valid_chat_config():
    for row in ENTRIES:
        config = declared_config(row.id)
        for name, value in row.chat_budget.chat_fields().items():
            assert getattr(config, name) == value, (row.id, name)


def test_eval_settings_put_the_users_overrides_over_the_budget():
    assert budgeted_settings("RAGEN/Sudoku-4x4-v0") == {"max_turns": 6}
    overrides = {"max_turns": 3, "think": False}
    assert budgeted_settings("RAGEN/Sudoku-4x4-v0", overrides) == overrides
    assert budgeted_settings("RAGEN/Countdown-v0", {"think": False}) == {"think": False}
    bandit = budgeted_settings("RAGEN/Bandit-v0", {"max_turns": 2})
    assert bandit == {"max_turns": 2, "max_actions_per_turn": 1, "max_actions_per_episode": 1}
    assert "max_new_tokens" not in bandit  # the agent's setting, not the chat's
    with pytest.raises(KeyError, match="did you mean RAGEN/Sudoku-4x4-v0"):
        chat_budget("RAGEN/Sudoku-5x5-v0")


def test_an_env_capped_budget_is_the_envs_cap():
    for env_id in ENV_CAPPED:
        budget, cap = chat_budget(env_id), gymnasium.make(env_id).unwrapped.max_steps
        per_turn = budget.max_actions_per_turn or ChatConfig().max_actions_per_turn
        assert budget.max_actions_per_episode == cap and budget.max_turns * per_turn == cap, env_id


# -- the cards ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", sorted({row.family for row in ENTRIES}))
def test_every_card_shows_its_ids_budgets(family):
    card = (REPO_ROOT / "data" / family / "README.md").read_text(encoding="utf-8")
    assert catalog.budget_block(family) in card, f"run scripts/chat_budget_cards.py ({family})"


def test_the_card_block_lists_exactly_the_declaring_ids():
    block = catalog.budget_block("sudoku")
    assert "| `RAGEN/Sudoku-4x4-v0` | 6 | - | - | - | - |" in block
    assert "`RAGEN/Sudoku-9x9-Easy-v0` | 5 | 2 | 20 | - | - | 400 | RAGEN-2" in block
    assert "No id of this card declares" in catalog.budget_block("countdown")
    assert "`RAGEN/Countdown-v0`" not in catalog.budget_block("countdown")


def test_envs_show_names_the_budget():
    assert "chat budget: max_turns=6 (" in catalog.env_page("RAGEN/Sudoku-4x4-v0", 123)
    assert "chat budget: the chat defaults (nothing declared)" in catalog.env_page("RAGEN/Countdown-v0", 123)


# -- the optimal agent under each id's budget ------------------------------------------------------------


@pytest.mark.parametrize("env_id", PLAYED_IDS)
def test_the_optimal_agent_wins_what_it_can_under_the_declared_budget(env_id):
    _require(env_id)
    seeds = _seeds(env_id)
    config = declared_config(env_id)
    winnable = _wins(env_id, unbounded(config), seeds)
    lost = winnable - _wins(env_id, config, seeds)
    expected = (RAGEN_SHORTFALL_FULL if FULL_SWEEPS else RAGEN_SHORTFALL).get(env_id, 0)
    assert len(lost) == expected, (env_id, sorted(lost))


# Ids beyond RAGEN's set that play the task of a RAGEN id, and take its budget whole: 2048's raw-reward
# variant (no budget the env allows wins a 2048 game: a 2048 tile takes ~930 moves, the cap is 700, so
# the task is the game to its cap, played as RAGEN-2 plays it), and Bandit-v0's held-out variants in
# its generalization suite (the same one-pull task: a gap must measure the names, not another prompt).
SAME_TASK = {
    "RAGEN/2048-RawReward-v0": "RAGEN/2048-v0",
    "RAGEN/Bandit-HeldOut-v0": "RAGEN/Bandit-v0",
    "RAGEN/Bandit-Rev-v0": "RAGEN/Bandit-v0",
}


@pytest.mark.parametrize(("env_id", "same_as"), SAME_TASK.items())
def test_an_id_of_a_ragen_task_takes_that_ids_budget(env_id, same_as):
    assert entry(env_id).ragen_name is None and entry(same_as).ragen_name is not None
    assert chat_budget(env_id).declared() == chat_budget(same_as).declared()
    assert same_as in chat_budget(env_id).basis


MEASURED_IDS = [
    row.id for row in ENTRIES
    if row.ragen_name is None and row.chat_budget.declared() and row.id not in {*SAME_TASK, *NO_REFERENCE_AGENT}
]


def test_the_measured_budgets_name_their_longest_wins():
    assert set(MEASURED_IDS) == {*LONGEST_WINS, *ENV_CAPPED, "RAGEN/Sudoku-4x4-v0"}  # every 4x4 win takes 6 turns


@pytest.mark.parametrize("env_id", MEASURED_IDS)
def test_a_declared_budget_beyond_ragen_is_needed_and_no_larger(env_id):
    """The defaults lose an episode the budget wins; one turn or one action less loses one too
    (an env-capped budget: the defaults lose one, and the cap is the env's).  Played on the longest
    wins where they are named, else on the sample."""
    _require(env_id)
    seeds, config = list(LONGEST_WINS.get(env_id, ())) or _seeds(env_id), declared_config(env_id)
    wins = _wins(env_id, config, seeds)
    assert _wins(env_id, ChatConfig(), seeds) < wins
    if env_id in ENV_CAPPED:
        return
    for name, value in chat_budget(env_id).chat_fields().items():
        if value == 1:
            continue  # nothing smaller exists (BabyAI's one action a turn is BALROG's protocol)
        smaller = dataclasses.replace(config, **{name: value - 1})
        assert _wins(env_id, smaller, seeds) < wins, (env_id, name)
