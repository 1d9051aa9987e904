"""The id table: every environment this project promises.

An id is a promise: the same seed gives the same episode on any machine, forever.
A change to what any seed produces needs a new version suffix (``-v1``), never an
edit of an existing row's kwargs.

Families outside the project add their rows through the entry-point group ``ragen_bench.envs``;
:mod:`ragen_bench.plugins` loads them into :data:`PLUGIN_ENTRIES` and registers every row with
Gymnasium (``register_all``, run by ``import ragen_bench``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from ragen_bench import values
from ragen_bench.data import crafter, nethack, reasoning_gym, textarena, textworld
from ragen_bench.data.babyai import LEVELS as BABYAI_LEVELS


@dataclass(frozen=True)
class ChatBudget:
    """The chat budget an id's tasks need; eval plays an id under it unless the user overrides a field.

    A field left ``None`` is not declared: the chat default applies (:class:`ragen_bench.chat.ChatConfig`'s
    field, ``configs/chat/default.yaml``), or for ``max_new_tokens`` the agent's own setting.  So an
    id whose tasks fit the defaults declares nothing (``ChatBudget()``).  The numbers come from:

    * an id that reproduces a RAGEN config (``EnvEntry.ragen_name``): RAGEN's own rollout settings
      for it (``agent_proxy.max_turn``/``max_actions_per_turn``/``max_context_window``, the env's
      ``max_actions_per_traj``, ``rollout.response_length``), even where the optimal agent needs more;
    * any other id: the least that lets the optimal agent win every test-panel episode it wins
      with turns, actions and reply length unbounded (``scripts/chat_budgets.py`` measures it).

    ``basis`` says which, in words the env card shows.
    """

    max_turns: int | None = None  # chat.max_turns: replies per episode
    max_actions_per_turn: int | None = None  # chat.max_actions_per_turn: actions one reply may name
    max_actions_per_episode: int | None = None  # chat.max_actions_per_episode: actions executed per episode
    # chat.history_window: the last turns a prompt shows (RAGEN-2's max_context_window), for long episodes
    history_window: int | None = None
    # chat.max_response_chars: the reply length kept (a longer reply is cut, so its answer is lost)
    max_response_chars: int | None = None
    # Tokens per reply for model agents (agent.max_new_tokens); the scripted agents have none.
    max_new_tokens: int | None = None
    basis: str = ""  # where the numbers come from (RAGEN's config, or the measurement), for the card

    def __post_init__(self) -> None:
        for name, value in self.declared().items():
            if type(value) is not int or value < 1:
                raise ValueError(f"ChatBudget.{name} must be an int >= 1 or None, got {value!r}")
        if bool(self.declared()) != bool(self.basis):
            raise ValueError("a ChatBudget that declares a number says its basis, and only then")

    def declared(self) -> dict[str, int]:
        """The fields this budget sets (name -> value), ``max_new_tokens`` included."""
        return {name: getattr(self, name) for name in BUDGET_FIELDS if getattr(self, name) is not None}

    def chat_fields(self) -> dict[str, int]:
        """The declared :class:`~ragen_bench.chat.ChatConfig` fields (every field but ``max_new_tokens``)."""
        return {name: value for name, value in self.declared().items() if name != "max_new_tokens"}


# ChatBudget's number fields, in card order: ChatConfig's field names and the agents' max_new_tokens.
BUDGET_FIELDS = tuple(budget_field.name for budget_field in fields(ChatBudget) if budget_field.name != "basis")
NO_BUDGET = ChatBudget()


@dataclass(frozen=True)
class EnvEntry:
    """One registered id.

    ``family`` is the id's folder under ``data/`` (panels, env card) and its package
    under ``ragen_bench/envs/``.  ``ragen_name`` is the config name in ``config/envs.yaml``
    of RAGEN v1 (RAGEN-AI/RAGEN 5eb79b8) or RAGEN-2 (mll-lab-nu/RAGEN 20daedc) whose
    episodes this id reproduces exactly (``None`` for ids beyond RAGEN's set).  The names
    both have but RAGEN-2 changed (``FrozenLake``, ``Bandit``, ``BanditTest``) are v1's
    unless the description starts with "RAGEN-2".
    """

    id: str
    family: str
    entry_point: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    ragen_name: str | None = None
    description: str = ""
    extra: str | None = None  # the pip extra its library comes from (None: this project's own code)
    chat_budget: ChatBudget = NO_BUDGET  # the chat budget its tasks need (ChatBudget: none beyond the defaults)


# (family, entry point) of each family's env class.
_SOKOBAN = ("sokoban", "ragen_bench.envs.sokoban:SokobanEnv")
_FROZEN_LAKE = ("frozen_lake", "ragen_bench.envs.frozen_lake:FrozenLakeEnv")
_BANDIT = ("bandit", "ragen_bench.envs.bandit:BanditEnv")
_COUNTDOWN = ("countdown", "ragen_bench.envs.countdown:CountdownEnv")
_MATH_QA = ("math_qa", "ragen_bench.envs.math_qa:MathQAEnv")
_RUBIKSCUBE = ("rubikscube", "ragen_bench.envs.rubikscube:RubiksCubeEnv")
_GAME_2048 = ("game_2048", "ragen_bench.envs.game_2048:Game2048Env")
_SUDOKU = ("sudoku", "ragen_bench.envs.sudoku:SudokuEnv")
_TWX = ("textworld_express", "ragen_bench.envs.textworld_express:TextWorldExpressEnv")
# The basis of a budget measured with the optimal agent (scripts/chat_budgets.py), or set by the env's cap.
_MEASURED = "the optimal agent's longest test-panel win"
_ENV_CAP = "the env's own step cap: slips decide the rest"
# RAGEN's rollout budgets (turns, actions per turn, per episode, reply tokens): v1 = RAGEN-AI/RAGEN
# 5eb79b8, RAGEN-2 = mll-lab-nu/RAGEN 20daedc; config/base.yaml's agent_proxy and rollout.response_length,
# the experiment file named, and envs.yaml's max_actions_per_traj of the tag.
_V1 = dict(max_turns=5, max_actions_per_turn=5, max_actions_per_episode=10, max_new_tokens=400)
_R2 = dict(max_turns=5, max_actions_per_turn=2, max_actions_per_episode=10, max_new_tokens=400)
_V1_BUDGET = ChatBudget(**_V1, basis="RAGEN v1 `config/base.yaml`")
_R2_BUDGET = ChatBudget(**_R2, basis="RAGEN-2 `config/base.yaml`")
_BANDIT_ROLLOUT = dict(max_turns=1, max_actions_per_turn=1, max_actions_per_episode=1, max_new_tokens=500)
_V1_BANDIT_BUDGET = ChatBudget(**_BANDIT_ROLLOUT, basis="RAGEN v1 `config/_1_bandit.yaml`")
_R2_BANDIT_BUDGET = ChatBudget(**_BANDIT_ROLLOUT, basis="RAGEN-2 `config/_1_bandit.yaml`")
# Bandit-v0's held-out variants are played as the suite's train id is, so a generalization gap measures
# the names, not a different prompt.
_V1_BANDIT_VARIANT_BUDGET = ChatBudget(**_BANDIT_ROLLOUT, basis="RAGEN/Bandit-v0's (RAGEN v1 `config/_1_bandit.yaml`): the same one-pull task")
_2048_BUDGET = dict(
    max_turns=800, max_actions_per_turn=1, max_actions_per_episode=700, history_window=5, max_new_tokens=256
)
# TextWorld-Express 1.1.0's games (the library loads at the first reset, never here), each with the
# turns its longest test-panel win takes (one free-text action a turn; cookingworld's is TWX's 100-step cap).
_TWX_GAMES = (
    ("cookingworld", "cook a meal from the cookbook's recipe",
     ChatBudget(max_turns=100, max_actions_per_episode=100, basis=_MEASURED)),
    ("twc", "put objects where they belong (TextWorld Commonsense)",
     ChatBudget(max_turns=32, max_actions_per_episode=32, basis=_MEASURED)),
    ("coin", "explore a house to find the coin",
     ChatBudget(max_turns=36, max_actions_per_episode=36, basis=_MEASURED)),
    ("mapreader", "carry the coin to the box, with a map",
     ChatBudget(max_turns=13, max_actions_per_episode=13, basis=_MEASURED)),
    ("arithmetic", "solve a math problem, box the item with that quantity", NO_BUDGET),
    ("sorting", "box the objects from smallest to largest quantity",
     ChatBudget(max_turns=10, basis=_MEASURED)),
    ("simonsays", "do exactly what Simon says", NO_BUDGET),
    ("peckingorder", "follow the instructions book, step by step",
     ChatBudget(max_turns=9, basis=_MEASURED)),
)
ENTRIES: tuple[EnvEntry, ...] = (
    EnvEntry(
        "RAGEN/Sokoban-6x6-v0",
        *_SOKOBAN,
        dict(dim_room=(6, 6), num_boxes=1, search_depth=300),
        ragen_name="SimpleSokoban",
        chat_budget=_V1_BUDGET,
        description="6x6 room, 1 box, reverse-play search depth 300.",
    ),
    EnvEntry(
        "RAGEN/Sokoban-8x8-v0",
        *_SOKOBAN,
        dict(dim_room=(8, 8), num_boxes=2, search_depth=10),
        ragen_name="LargerSokoban",
        chat_budget=_V1_BUDGET,
        description="8x8 room, 2 boxes, reverse-play search depth 10.",
    ),
    EnvEntry(
        "RAGEN/Sokoban-6x6-AltVocab-v0",
        *_SOKOBAN,
        dict(dim_room=(6, 6), num_boxes=1, search_depth=30, vocabulary="alt"),
        ragen_name="SokobanDifferentGridVocab",
        chat_budget=_V1_BUDGET,
        description="6x6 room, 1 box, depth 30, symbols W . G C B A @.",
    ),
    EnvEntry(
        "RAGEN/Sokoban-10x10-v0",
        *_SOKOBAN,
        dict(dim_room=(10, 10), num_boxes=3, search_depth=100),
        ragen_name=None,
        chat_budget=ChatBudget(max_turns=13, max_actions_per_episode=63, basis=_MEASURED),
        description="10x10 room, 3 boxes, reverse-play search depth 100 (beyond RAGEN's set).",
    ),
    EnvEntry(
        "RAGEN/Sokoban-6x6-Coord-v0",
        *_SOKOBAN,
        dict(dim_room=(6, 6), num_boxes=1, search_depth=300, observation_format="grid_coord"),
        ragen_name="CoordSokoban",
        chat_budget=_R2_BUDGET,
        description="RAGEN-2: Sokoban-6x6's levels, grid plus zero-indexed coordinates of targets, boxes, player.",
    ),
    EnvEntry(
        "RAGEN/Sokoban-6x6-Visual-v0",
        *_SOKOBAN,
        # The observation stays Sokoban-6x6's text grid; render() is the frame (96x96x3, as RAGEN-2's).
        dict(dim_room=(6, 6), num_boxes=1, search_depth=300, render_mode="rgb_array"),
        ragen_name="VisualSimpleSokoban",
        chat_budget=_R2_BUDGET,
        description="RAGEN-2: Sokoban-6x6's levels, with a picture of every state (render_mode='rgb_array').",
    ),
    EnvEntry(
        "RAGEN/FrozenLake-4x4-v0",
        *_FROZEN_LAKE,
        dict(size=4, frozen_prob=0.8, is_slippery=True),
        ragen_name="FrozenLake",
        chat_budget=_V1_BUDGET,
        description="Random 4x4 lake, 80% ice, slippery (1/3 intended, 1/3 each side).",
    ),
    EnvEntry(
        "RAGEN/FrozenLake-8x8-v0",
        *_FROZEN_LAKE,
        dict(size=8, frozen_prob=0.8, is_slippery=True),
        ragen_name=None,
        chat_budget=ChatBudget(max_turns=20, max_actions_per_episode=100, basis=_ENV_CAP),
        description="Random 8x8 lake, 80% ice, slippery (beyond RAGEN's set).",
    ),
    EnvEntry(
        "RAGEN/FrozenLake-4x4-NoSlip-v0",
        *_FROZEN_LAKE,
        dict(size=4, frozen_prob=0.8, is_slippery=False),
        ragen_name=None,
        description="RAGEN's 4x4 lakes without slipping: every move goes where chosen.",
    ),
    EnvEntry(
        "RAGEN/FrozenLake-4x4-R2-v0",
        *_FROZEN_LAKE,
        dict(size=4, frozen_prob=0.9, is_slippery=True, success_rate=0.8),
        ragen_name="FrozenLake",
        chat_budget=_R2_BUDGET,
        description="RAGEN-2's FrozenLake: random 4x4 lake, 90% ice, a move goes as chosen w.p. 0.8.",
    ),
    EnvEntry(
        "RAGEN/FrozenLake-4x4-Coord-v0",
        *_FROZEN_LAKE,
        dict(size=4, frozen_prob=0.9, is_slippery=True, success_rate=0.8, observation_format="grid_coord"),
        ragen_name="CoordFrozenLake",
        chat_budget=_R2_BUDGET,
        description="RAGEN-2: FrozenLake-4x4-R2's lakes, grid plus zero-indexed coordinates of start, goal, player, holes.",
    ),
    EnvEntry(
        "RAGEN/FrozenLake-4x4-Coord-NoSlip-v0",
        *_FROZEN_LAKE,
        dict(size=4, frozen_prob=0.9, is_slippery=True, success_rate=1.0, observation_format="grid_coord"),
        ragen_name="CoordFrozenLake",
        chat_budget=ChatBudget(**_R2, basis="RAGEN-2 `config/_3_frozen_lake.yaml`"),
        description="RAGEN-2's FrozenLake experiment (_3_frozen_lake.yaml): CoordFrozenLake with success_rate 1, no slips.",
    ),
    EnvEntry(
        "RAGEN/Bandit-v0",
        *_BANDIT,
        dict(low_risk_name="Phoenix", high_risk_name="Dragon"),
        ragen_name="Bandit",
        chat_budget=_V1_BANDIT_BUDGET,
        description="Two arms: Phoenix (low risk, 0.1) and Dragon (high risk, 1.0 w.p. 0.25).",
    ),
    EnvEntry(
        "RAGEN/BanditTest-v0",
        *_BANDIT,
        dict(low_risk_name="Trader", high_risk_name="Librarian"),
        ragen_name="BanditTest",
        chat_budget=_V1_BANDIT_BUDGET,
        description="Two arms: Trader (low risk) and Librarian (high risk); RAGEN's held-out names.",
    ),
    EnvEntry(
        "RAGEN/Bandit-HeldOut-v0",
        *_BANDIT,
        dict(name_pool="test"),
        ragen_name=None,
        chat_budget=_V1_BANDIT_VARIANT_BUDGET,
        description="Held-out name pairs (seed picks the pair); names hint at the payoffs.",
    ),
    EnvEntry(
        "RAGEN/Bandit-Rev-v0",
        *_BANDIT,
        dict(low_risk_name="Dragon", high_risk_name="Phoenix"),
        ragen_name=None,
        chat_budget=_V1_BANDIT_VARIANT_BUDGET,
        description="Bandit with the payoffs behind RAGEN's names swapped (the paper's Bandit-Rev).",
    ),
    EnvEntry(
        "RAGEN/Bandit-R2-v0",
        *_BANDIT,
        dict(name_pool="ragen2-train"),
        ragen_name="Bandit",
        chat_budget=_R2_BANDIT_BUDGET,
        description="RAGEN-2's Bandit: the seed draws one of 12 occupation pairs (Teacher/Trader, ...).",
    ),
    EnvEntry(
        "RAGEN/BanditTest-R2-v0",
        *_BANDIT,
        dict(name_pool="ragen2-test"),
        ragen_name="BanditTest",
        chat_budget=_R2_BANDIT_BUDGET,
        description="RAGEN-2's BanditTest: the seed draws one of 8 held-out occupation pairs.",
    ),
    EnvEntry(
        "RAGEN/Countdown-v0",
        *_COUNTDOWN,
        dict(min_count=3, max_count=4, max_number=99, max_target=100),
        ragen_name=None,
        description="3-4 numbers in 1..99, reachable target in 1..100; RAGEN's scoring (generated, not RAGEN's data).",
    ),
    EnvEntry(
        "RAGEN/MathQA-v0",
        *_MATH_QA,
        dict(max_attempts=5),
        ragen_name=None,
        description="Generated arithmetic word problems with RAGEN's MetaMathQA rules (pass data_path= for a local file).",
    ),
    EnvEntry(
        "RAGEN/RubiksCube-2x2-Depth1-v0",
        *_RUBIKSCUBE,
        dict(scramble_depth=1, max_steps=20),
        ragen_name="rubikscube",
        chat_budget=ChatBudget(
            max_turns=25, max_actions_per_turn=4, max_actions_per_episode=20, history_window=5, max_new_tokens=500,
            basis="RAGEN-2 `config/_10_rubikscube.yaml`",
        ),
        description="RAGEN-2's 2x2 cube scrambled by 1 turn, 20 steps.",
    ),
    EnvEntry(
        "RAGEN/RubiksCube-2x2-Depth3-v0",
        *_RUBIKSCUBE,
        dict(scramble_depth=3, max_steps=20),
        ragen_name=None,
        description="RAGEN-2's 2x2 cube scrambled by 3 turns, 20 steps.",
    ),
    EnvEntry(
        "RAGEN/RubiksCube-2x2-Depth5-v0",
        *_RUBIKSCUBE,
        dict(scramble_depth=5, max_steps=20),
        ragen_name=None,
        description="RAGEN-2's 2x2 cube scrambled by 5 turns (its env's default depth), 20 steps.",
    ),
    EnvEntry(
        "RAGEN/2048-v0",
        *_GAME_2048,
        dict(size=4, two_prob=0.9, log_reward=True, max_steps=700),
        ragen_name="game_2048",
        chat_budget=ChatBudget(**_2048_BUDGET, basis="RAGEN-2 `config/_9_2048.yaml`"),
        description="RAGEN-2's 2048: 4x4, spawns 2 (0.9) or 4, reward 0.1*log2(merge+1), 700 moves.",
    ),
    EnvEntry(
        "RAGEN/2048-RawReward-v0",
        *_GAME_2048,
        dict(size=4, two_prob=0.9, log_reward=False, max_steps=700),
        ragen_name=None,
        chat_budget=ChatBudget(**_2048_BUDGET, basis="RAGEN/2048-v0's: the same game to the same 700-move cap"),
        description="RAGEN/2048-v0 paying the raw merge score (-0.1 for a move that moves nothing): RAGEN-2's use_log_reward=False.",
    ),
    EnvEntry(
        "RAGEN/Sudoku-9x9-Easy-v0",
        *_SUDOKU,
        dict(grid_size=9, difficulty="easy", max_steps=81),
        ragen_name="SimpleSudoku",
        chat_budget=ChatBudget(**{**_R2, "max_actions_per_episode": 20}, basis="RAGEN-2 `config/_8_sudoku.yaml`"),
        description="RAGEN-2's SimpleSudoku: 9x9, 32 of 81 cells empty, feedback with conflicts and candidates.",
    ),
    EnvEntry(
        "RAGEN/Sudoku-9x9-Medium-v0",
        *_SUDOKU,
        dict(grid_size=9, difficulty="medium", max_steps=81),
        ragen_name="MediumSudoku",
        chat_budget=ChatBudget(**{**_R2, "max_actions_per_episode": 30}, basis="RAGEN-2 `config/base.yaml`"),
        description="RAGEN-2's MediumSudoku: 9x9, 40 of 81 cells empty.",
    ),
    EnvEntry(
        "RAGEN/Sudoku-4x4-v0",
        *_SUDOKU,
        dict(grid_size=4, difficulty="easy", max_steps=16),
        ragen_name=None,
        chat_budget=ChatBudget(max_turns=6, basis=_MEASURED),
        description="RAGEN-2's Sudoku on a 4x4 board (2x2 boxes, 6 of 16 cells empty) for small models.",
    ),
    *(
        EnvEntry(
            f"RAGEN/TWX-{game}-v0",
            *_TWX,
            dict(game=game),
            ragen_name=None,
            chat_budget=budget,
            description=f"TextWorld-Express {game}: {what}; TWX's dev/test seeds (needs a JVM).",
            extra="twx",
        )
        for game, what, budget in _TWX_GAMES
    ),
)

# reasoning-gym's datasets (extra 'rg'), frozen in ragen_bench/data/reasoning_gym.py.
RG_DATASETS: tuple[str, ...] = reasoning_gym.DATASETS
# The datasets whose reference answer, in the optimal agent's reply, outgrows the default reply
# length on a test seed: that reply's length (tower_of_hanoi: 7 disks, 127 moves).
_RG_BUDGETS = {
    "palindrome_partitioning": ChatBudget(max_response_chars=6681, basis=_MEASURED),
    "tower_of_hanoi": ChatBudget(max_response_chars=4136, basis=_MEASURED),
}
ENTRIES += tuple(
    EnvEntry(f"RAGEN/RG-{name}-v0", "reasoning_gym", "ragen_bench.envs.reasoning_gym:ReasoningGymEnv", dict(dataset=name),
             description=f"reasoning-gym '{name}': one question, graded by the dataset's own score_answer.",
             extra="rg", chat_budget=_RG_BUDGETS.get(name, NO_BUDGET))
    for name in RG_DATASETS
)
ENTRIES += tuple(  # BabyAI (minigrid 3.2.0): ragen_bench/envs/babyai/backend.py's levels and their budgets
    EnvEntry(f"RAGEN/BabyAI-{level}-v0", "babyai", "ragen_bench.envs.babyai:BabyAIEnv", dict(level=level),
             description=f"BabyAI {level} (minigrid 3.2.0): {what}; a text view of its 7x7 view.", extra="babyai",
             chat_budget=ChatBudget(max_turns=turns, max_actions_per_turn=1, max_actions_per_episode=turns,
                                    basis=f"{_MEASURED}, one action a turn as BALROG plays"))
    for level, (_, what, turns) in BABYAI_LEVELS.items()
)

ENTRIES += (EnvEntry("RAGEN/HumanEval-v0", "human_eval", "ragen_bench.envs.human_eval:HumanEvalEnv", dict(max_attempts=5),
                     description="HumanEval (164 problems): write the function, see the failing test, revise.", extra="code"),)

# TextArena's single-player games (extra 'textarena'): frozen in ragen_bench/data/textarena.py with those left out.
ENTRIES += tuple(EnvEntry(**row, chat_budget=ChatBudget(**budget)) for row, budget in textarena.rows())
# Crafter (extra 'crafter'): its row, BALROG's protocol and budget in ragen_bench/data/crafter.py.
ENTRIES += tuple(EnvEntry(**row, chat_budget=ChatBudget(**budget)) for row, budget in crafter.rows())
# MiniHack's tasks and NetHack (extra 'nethack', its own venv): frozen in ragen_bench/data/nethack.py.
ENTRIES += tuple(EnvEntry(**row, chat_budget=ChatBudget(**budget)) for row, budget in nethack.rows())
# BALROG's TextWorld games (extra 'textworld'): ragen_bench/data/textworld.py, games frozen in data/textworld/games.
ENTRIES += tuple(EnvEntry(**row, chat_budget=ChatBudget(**budget)) for row, budget in textworld.rows())

ENV_IDS: tuple[str, ...] = tuple(entry.id for entry in ENTRIES)
# The ids whose env is this project's own code (no extra needed).
BUILTIN_IDS: tuple[str, ...] = tuple(entry.id for entry in ENTRIES if entry.extra is None)
_BY_ID = {entry.id: entry for entry in ENTRIES}

# Rows of the plugins loaded so far, in load order (filled by plugins.register_all).
PLUGIN_ENTRIES: list[EnvEntry] = []


def all_entries() -> tuple[EnvEntry, ...]:
    """The project's rows, then the plugins' (as loaded by :func:`ragen_bench.plugins.register_all`)."""
    return (*ENTRIES, *PLUGIN_ENTRIES)


def chat_budget(env_id: str) -> ChatBudget:
    """The chat budget ``env_id`` declares (``ChatBudget()`` when the defaults fit its tasks)."""
    return entry(env_id).chat_budget


def entry(env_id: str) -> EnvEntry:
    """The table row of ``env_id`` (the project's or a plugin's); a clear error suggests the closest ids otherwise."""
    try:
        return _BY_ID[env_id]
    except KeyError:
        known = [row.id for row in all_entries()]
        raise KeyError(values.unknown_name("env id", env_id, known, "`ragen-bench envs list`")) from None
