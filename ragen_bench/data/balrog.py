"""BALROG's protocol and its published text-track numbers, as frozen data (no import of any world).

BALROG (Paglieri et al., "BALROG: Benchmarking Agentic LLM and VLM Reasoning On Games",
arXiv:2411.13543) plays six worlds a fixed number of episodes per task and scores each world 0-100
(success for BabyAI, BabaIsAI and MiniHack; achievements for Crafter; points for TextWorld;
progression for NetHack).  :data:`TASKS` maps every BALROG task to the id of ours that plays it, or to
nothing with the reason; ``ragen_bench.suites.balrog_definition`` builds the ``balrog-v0`` suite from it.
:data:`PUBLISHED` holds BALROG's leaderboard rows for the text (LLM) track: reported, never verified here.

Sources, each read at one commit:

* the protocol: balrog-ai/BALROG@af7d1f17 (2026-03-16), ``balrog/config/config.yaml`` (``tasks``,
  ``eval.num_episodes``, ``agent.max_text_history``) and ``balrog/prompt_builder/history.py``;
* the numbers: balrog-ai/experiments@989931c5 (2025-07-23), the repository behind balrogai.com's
  leaderboard: ``submissions/LLM/<folder>/summary.json`` (``environments.<world>.progression_percentage``,
  ``episodes_played``, ``average_progress``) and ``metadata.yaml`` (``name``, ``date``).
"""

from __future__ import annotations

from dataclasses import dataclass

PROTOCOL_SOURCE = "balrog-ai/BALROG@af7d1f17e0deec3a7a0e334beae5f11b7a21371b, balrog/config/config.yaml"
PUBLISHED_SOURCE = "balrog-ai/experiments@989931c5f7acb66ace99d423a480fd537d74e749 (2025-07-23)"
PUBLISHED_URL = "https://balrogai.com"
PAPER_URL = "https://arxiv.org/abs/2411.13543"
# The suite these rows stand beside on the leaderboard.
SUITE = "balrog-v0"

# BALROG's worlds in its leaderboard's column order, with the names it shows.
WORLDS: dict[str, str] = {
    "babyai": "BabyAI", "crafter": "Crafter", "textworld": "TextWorld", "babaisai": "BabaIsAI",
    "minihack": "MiniHack", "nle": "NetHack",
}
# config.yaml eval.num_episodes: episodes per task of each world.
EPISODES: dict[str, int] = {"babyai": 10, "crafter": 10, "textworld": 10, "babaisai": 3, "minihack": 5, "nle": 5}
# config.yaml agent.max_text_history: the prompt keeps the last 16 observations and the 16 actions
# between them (history.py's deque of 2 x 16 events), one action a step: our chat.history_window=16.
HISTORY_TURNS = 16


@dataclass(frozen=True)
class Task:
    """One BALROG task: its world, its name in config.yaml, and our id that plays it (None: left out, and why)."""

    world: str
    name: str
    env_id: str | None
    note: str = ""


_BABAISAI_LEFT_OUT = ("BALROG installs BabaIsAI ('baba') from nacloos/baba-is-ai on GitHub; no release on PyPI, "
                      "and nothing here may download at install or run time")
_BABAISAI_TASKS = """
make_win-distr_obj_rule goto_win-distr_obj_rule goto_win goto_win-distr_obj goto_win-distr_rule
goto_win-distr_obj-irrelevant_rule make_win-distr_obj make_win-distr_rule make_win make_win-distr_obj-irrelevant_rule
two_room-goto_win two_room-goto_win-distr_obj_rule two_room-goto_win-distr_rule two_room-goto_win-distr_obj
two_room-goto_win-distr_obj-irrelevant_rule two_room-goto_win-distr_win_rule two_room-break_stop-goto_win-distr_obj_rule
two_room-break_stop-goto_win-distr_obj two_room-break_stop-goto_win-distr_rule
two_room-break_stop-goto_win-distr_obj-irrelevant_rule two_room-break_stop-goto_win
two_room-maybe_break_stop-goto_win-distr_obj_rule two_room-maybe_break_stop-goto_win
two_room-maybe_break_stop-goto_win-distr_obj two_room-maybe_break_stop-goto_win-distr_rule
two_room-maybe_break_stop-goto_win-distr_obj-irrelevant_rule two_room-make_win-distr_obj_rule
two_room-make_win-distr_rule two_room-make_win two_room-make_win-distr_obj-irrelevant_rule two_room-make_win-distr_obj
two_room-make_win-distr_win_rule two_room-break_stop-make_win-distr_obj_rule two_room-break_stop-make_win-distr_rule
two_room-break_stop-make_win two_room-break_stop-make_win-distr_obj-irrelevant_rule two_room-break_stop-make_win-distr_obj
two_room-make_you two_room-make_you-make_win two_room-make_wall_win
""".split()

TASKS: tuple[Task, ...] = (
    Task("babyai", "BabyAI-MixedTrainLocal-v0/goto", "RAGEN/BabyAI-GoToLocal-v0"),
    Task("babyai", "BabyAI-MixedTrainLocal-v0/pickup", "RAGEN/BabyAI-PickupLoc-v0"),
    Task("babyai", "BabyAI-MixedTrainLocal-v0/open", "RAGEN/BabyAI-UnlockLocal-v0"),
    Task("babyai", "BabyAI-MixedTrainLocal-v0/putnext", "RAGEN/BabyAI-PutNextLocal-v0"),
    Task("babyai", "BabyAI-MixedTrainLocal-v0/pick_up_seq_go_to", None,
         "no minigrid 3.2.0 level poses 'pick up X, then go to Y' (BALROG's comes from its babyai-text fork)"),
    Task("crafter", "default", "RAGEN/Crafter-v0"),
    Task("textworld", "treasure_hunter", "RAGEN/TextWorld-TreasureHunter-v0"),
    Task("textworld", "the_cooking_game", "RAGEN/TextWorld-Cooking-v0"),
    Task("textworld", "coin_collector", "RAGEN/TextWorld-CoinCollector-v0"),
    *(Task("babaisai", f"env/{name}", None, _BABAISAI_LEFT_OUT) for name in _BABAISAI_TASKS),
    Task("minihack", "MiniHack-Boxoban-Hard-v0", None, "downloads its levels (DeepMind's boxoban-levels) at run time"),
    Task("minihack", "MiniHack-Boxoban-Medium-v0", None, "downloads its levels (DeepMind's boxoban-levels) at run time"),
    *(Task("minihack", f"MiniHack-{name}-v0", f"RAGEN/MiniHack-{name}-v0") for name in
      ("MazeWalk-9x9", "MazeWalk-15x15", "Corridor-R3", "CorridorBattle-Dark", "Quest-Easy", "Quest-Medium")),
    Task("nle", "NetHackChallenge-v0", "RAGEN/NetHack-v0",
         "NetHackScore-v0 with NetHackChallenge's settings: the same game, but it takes a seed"),
)
# Our ids that play one of BALROG's tasks, in TASKS' order: the members of the suite balrog-v0.
NAMED_IDS: tuple[str, ...] = tuple(task.env_id for task in TASKS if task.env_id is not None)


@dataclass(frozen=True)
class Published:
    """One row of BALROG's text-track leaderboard: per world, % progression and the episodes it averages."""

    model: str  # metadata.yaml name
    agent: str  # BALROG's agent type: naive (act directly), robust_naive, robust_cot (reason, then act)
    date: str  # metadata.yaml date
    folder: str  # submissions/LLM/<folder> in PUBLISHED_SOURCE
    progress: dict[str, float]  # world -> % progression
    episodes: dict[str, int]  # world -> episodes played
    average: float  # summary.json average_progress: the mean over the six worlds


def _row(model: str, agent: str, date: str, folder: str, progress: tuple[float, ...], episodes: tuple[int, ...],
         average: float) -> Published:
    return Published(model, agent, date, folder, dict(zip(WORLDS, progress)), dict(zip(WORLDS, episodes)), average)


# Every LLM submission at PUBLISHED_SOURCE, as its summary.json states it (folder order).  Older rows
# played other counts than today's config (BabyAI 25 a task, TextWorld 20): see ``episodes``.
PUBLISHED: tuple[Published, ...] = (
    _row('DeepSeek-R1', 'robust_cot', '2025-04-10', '20240410_robust_cot_DeepSeek-R1',
         (74.0, 36.36363636363637, 21.764705882352942, 50.83333333333333, 25.0, 1.3826381784167503),
         (50, 10, 30, 120, 40, 5), 34.89071895962323),
    _row('GPT-4o-mini-2024-07-18', 'naive', '2024-11-11', '20240924_naive-GPT4o-mini',
         (50.4, 15.9, 12.25, 15.6, 10.0, 0.0),
         (125, 10, 60, 200, 40, 5), 17.36),
    _row('GPT-4o-2024-05-13', 'naive', '2024-11-11', '20240924_naive-GPT4o',
         (77.6, 33.1, 39.31, 33.66, 10.0, 0.37),
         (125, 10, 60, 200, 40, 5), 32.34),
    _row('Gemini-1.5-Flash-002', 'naive', '2024-11-11', '20240924_naive-Gemini-1.5-Flash',
         (50.0, 20.0, 0.0, 12.8, 5.0, 0.0),
         (50, 10, 60, 200, 40, 5), 14.633333333333333),
    _row('Gemini-1.5-Pro-002', 'naive', '2024-11-11', '20240924_naive-Gemini-1.5-Pro',
         (58.4, 30.21, 0.0, 32.02, 5.0, 0.37),
         (125, 10, 60, 200, 40, 5), 21.0),
    _row('Llama-3.1-70B-it', 'naive', '2024-11-11', '20240930_naive-Llama-3.1-70B-Instruct',
         (73.2, 31.21, 15.0, 40.0, 7.5, 0.35),
         (125, 10, 60, 200, 40, 5), 27.876666666666665),
    _row('Llama-3.2-11B-it', 'naive', '2024-11-11', '20240930_naive-Llama-3.2-11B-Instruct',
         (50.0, 26.19, 6.66, 15.6, 2.5, 0.0),
         (50, 10, 60, 200, 40, 5), 16.825),
    _row('Llama-3.2-90B-it', 'naive', '2024-11-11', '20240930_naive-Llama-3.2-90B-Instruct',
         (72.0, 31.68, 11.18, 43.9, 5.0, 0.0),
         (50, 10, 60, 200, 40, 5), 27.293333333333337),
    _row('Llama-3.2-1B-it', 'naive', '2024-11-11', '20241030_naive-Llama-3.2-1B-Instruct',
         (8.0, 12.727272727272727, 3.3333333333333335, 10.833333333333334, 5.0, 0.0),
         (50, 10, 30, 120, 40, 5), 6.648989898989899),
    _row('Llama-3.2-3B-it', 'naive', '2024-11-11', '20241030_naive-Llama-3.2-3B-Instruct',
         (20.0, 17.27272727272727, 3.5294117647058822, 17.5, 2.5, 0.0),
         (50, 10, 30, 120, 40, 5), 10.133689839572192),
    _row('Llama-3.1-8B-it', 'naive', '2024-11-11', '20241101_naive-Llama-3.1-8B-Instruct',
         (36.0, 25.454545454545453, 6.07843137254902, 18.333333333333332, 5.0, 0.0),
         (50, 10, 30, 120, 40, 5), 15.144385026737966),
    _row('Claude-3.5-Sonnet-2024-10-22', 'naive', '2024-11-11', '20241103_Claude-3.5-Sonnet',
         (68.0, 32.72727272727273, 42.05882352941177, 37.5, 15.0, 0.5821797203427749),
         (50, 10, 60, 120, 40, 5), 32.64471266283788),
    _row('Qwen2-VL-72B-it', 'naive', '2024-11-25', '20241115_naive-Qwen2-VL-72B-Instruct',
         (24.0, 22.72, 16.47, 10.83, 2.5, 0.0),
         (50, 10, 30, 120, 40, 5), 12.75),
    _row('Qwen2-VL-7B-it', 'naive', '2024-11-25', '20241115_naive-Qwen2-VL-7B-instruct',
         (4.0, 6.363636363636363, 1.5686274509803921, 7.563025210084033, 2.5, 0.0),
         (50, 10, 30, 119, 40, 5), 3.665881504116798),
    _row('Qwen2.5-72B-it', 'naive', '2024-11-25', '20241115_naive-Qwen2.5-72B-Instruct',
         (34.0, 27.272727272727277, 11.176470588235295, 19.327731092436977, 5.0, 0.30784538150722346),
         (50, 10, 30, 119, 40, 5), 16.18),
    _row('Qwen-2.5-7B-it', 'naive', '2024-11-25', '20241115_naive-Qwen2.5-7B-it',
         (14.000000000000002, 16.363636363636363, 3.9215686274509802, 12.5, 0.0, 0.0),
         (50, 10, 30, 120, 40, 5), 7.797534165181225),
    _row('Claude-3.5-Haiku-2024-10-22', 'naive', '2024-12-11', '20241209_naive-claude-3-5-haiku',
         (52.0, 26.36363636363636, 18.03921568627451, 8.333333333333332, 10.0, 1.1553688988639115),
         (50, 10, 30, 120, 40, 5), 19.31525904701802),
    _row('Mistral-Nemo-it-2407', 'naive', '2024-12-09', '20241209_naive-mistral-nemo-instruct',
         (50.0, 27.727272727272727, 4.509803921568627, 20.833333333333336, 2.5, 0.30784538150722346),
         (50, 10, 30, 120, 40, 5), 17.646375893946985),
    _row('Llama-3.3-70B-it', 'naive', '2024-12-09', '20241209_naive_Llama-3.3-70B-Instruct',
         (66.0, 28.636363636363633, 9.019607843137255, 29.166666666666668, 5.0, 0.36956809123452017),
         (50, 10, 30, 120, 40, 5), 23.03203437290035),
    _row('Microsoft-Phi-4', 'robust_naive', '2025-01-13', '20250113_robust_naive_microsoft_phi-4',
         (32.0, 13.636363636363635, 2.5490196078431375, 16.666666666666664, 5.0, 0.0),
         (50, 10, 30, 120, 40, 5), 11.642008318478906),
    _row('DeepSeek-R1-Distill-Qwen-32B', 'robust_cot', '2025-01-26', '20250126_robust_cot_deepseek_R1_distill_qwen32B',
         (48.0, 14.999999999999996, 10.588235294117649, 40.0, 2.5, 0.7391361824690403),
         (50, 10, 30, 120, 40, 5), 19.471228579431113),
    _row('Reka-Flash-3', 'robust_cot', '2025-03-13', '20250313_robust_cot_Reka-Flash-3',
         (76.0, 33.63636363636363, 11.568627450980392, 43.333333333333336, 10.0, 0.6156907630144469),
         (50, 10, 30, 120, 40, 5), 29.19233586394863),
    _row('Gemini-2.5-Pro-Exp-03-25', 'naive', '2025-04-25', '20250425_naive_Gemini-2.5-Pro-Exp-03-25',
         (80.0, 55.00000000000001, 49.2156862745098, 56.666666666666664, 17.5, 1.6937458032433108),
         (50, 10, 30, 120, 40, 10), 43.346016457403294),
    _row('Grok-3-beta', 'naive', '2025-04-25', '20250425_naive_grok-3',
         (62.0, 25.000000000000007, 32.549019607843135, 33.33333333333333, 22.5, 1.638571629874851),
         (50, 10, 30, 120, 40, 5), 29.503487428508553),
    _row('Grok-4', 'naive', '2025-07-23', '20250713_naive_grok-4',
         (76.0, 57.272727272727266, 62.941176470588225, 45.83333333333333, 17.5, 1.7550204794781488),
         (50, 10, 30, 120, 40, 5), 43.55037625935449),
    _row('Gemini-2.5-Flash', 'naive', '2025-07-22', '20250719-naive_gemini-2.5-flash',
         (68.0, 40.0, 29.607843137254903, 50.0, 12.5, 0.7939956585192304),
         (50, 10, 30, 120, 40, 5), 33.48363979929569),
)
