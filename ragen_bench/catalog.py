"""What ``ragen-bench envs list/show/verify`` says: the registered envs and games, one env's page,
and whether every panel still regenerates to its recorded checksum.

Above the registries, the games and the panels (it reads all three), below the chat layer:
it plays nothing.  Each function returns what the command prints; the CLI only prints it.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragen_bench.envs.babyai import backend as babyai
from ragen_bench.envs.crafter import backend as crafter
from ragen_bench.envs.human_eval import problems as human_eval
from ragen_bench.envs.nethack import backend as nethack
from ragen_bench.envs.reasoning_gym import ids as reasoning_gym_ids
from ragen_bench.envs.textarena import library as textarena
from ragen_bench.envs.textworld import backend as textworld
from ragen_bench.envs.textworld_express import backend as textworld_express

if TYPE_CHECKING:
    from ragen_bench.registry import ChatBudget

# An id's extra -> (the library it installs, the one-line hint a missing one gives).
_EXTRA_LIBRARIES = {
    reasoning_gym_ids.EXTRA: (reasoning_gym_ids.LIBRARY, reasoning_gym_ids.INSTALL_HINT),
    "twx": ("textworld_express", textworld_express.LIBRARY_HINT),
    babyai.EXTRA: (babyai.LIBRARY, babyai.INSTALL_HINT),
    crafter.EXTRA: (crafter.LIBRARY, crafter.INSTALL_HINT),
    human_eval.EXTRA: (human_eval.LIBRARY, human_eval.INSTALL_HINT),
    textarena.EXTRA: (textarena.LIBRARY, textarena.INSTALL_HINT),
    nethack.EXTRA: (nethack.LIBRARY, nethack.INSTALL_HINT),
    textworld.EXTRA: (textworld.LIBRARY, textworld.INSTALL_HINT),
}
# Extras that cannot join the main install (they would hold back its libraries): each lives in a
# virtualenv of its own, made by the script named here, where its ids are tested.
OWN_VENV_EXTRAS = {nethack.EXTRA: "scripts/setup_nethack_venv.sh"}


def missing_extra(env_id: str) -> str | None:
    """The install hint of a single-agent id whose extra's library is not installed, else ``None``."""
    from ragen_bench.registry import entry

    library, hint = _EXTRA_LIBRARIES.get(entry(env_id).extra, (None, None))
    return hint if library is not None and importlib.util.find_spec(library) is None else None


def env_rows() -> list[dict[str, str]]:
    """``envs list``: one row per registered env and game (id, RAGEN name, panels, description)."""
    from ragen_bench import panels
    from ragen_bench.games.registry import GAME_ENTRIES
    from ragen_bench.registry import all_entries

    singles = all_entries()  # the project's ids, then the plugins'
    return [
        {
            "id": row.id,
            "ragen": getattr(row, "ragen_name", None) or "-",
            "panels": ",".join(panels.available(row.id)) or "-",
            "description": _description(row, row in singles),
        }
        for row in (*singles, *GAME_ENTRIES)
    ]


def _description(row, single_agent: bool) -> str:
    hint = missing_extra(row.id) if single_agent else row.missing_extra()
    text = row.description if single_agent else f"multi-agent (PettingZoo): {row.description}"
    return f"[not installed: extra '{row.extra}'] {text}" if hint else text


def family_rows() -> list[dict[str, str]]:
    """``envs list``'s second table: per family, its kind, how many ids, the extra it needs and
    whether that extra is installed; a last row counts all single-agent ids and games."""
    from ragen_bench.games.registry import GAME_ENTRIES
    from ragen_bench.registry import all_entries

    singles = all_entries()
    families: dict[tuple[str, str], list] = {}
    for row in singles:
        families.setdefault((row.family, "single-agent"), []).append(row)
    for row in GAME_ENTRIES:
        families.setdefault((row.family, "game"), []).append(row)
    table = []
    for (name, kind), rows in families.items():
        extras = sorted({row.extra or "-" for row in rows})
        missing = any(missing_extra(row.id) if kind == "single-agent" else row.missing_extra() for row in rows)
        table.append({"family": name, "kind": kind, "ids": str(len(rows)), "extra": ",".join(extras),
                      "installed": "no" if missing else "yes"})
    table.append({"family": "all", "kind": f"{len(singles)} single-agent, {len(GAME_ENTRIES)} games",
                  "ids": str(len(singles) + len(GAME_ENTRIES)), "extra": "", "installed": ""})
    return table


def env_page(env_id: str, seed: int) -> str:
    """``envs show``: an env's (or a game's) rules, symbols, actions, panels and the state ``seed`` makes.

    Everything is computed before the page is returned: a bad seed is one error, with no page.
    """
    import gymnasium

    import ragen_bench  # noqa: F401  (registers the ids)
    from ragen_bench.games.registry import GAME_IDS
    from ragen_bench.registry import entry

    if env_id in GAME_IDS:
        return _game_page(env_id, seed)
    row = entry(env_id)
    env = gymnasium.make(row.id)
    try:
        observation, _ = env.reset(seed=seed)
        base = env.unwrapped
        lines = [f"{row.id}  ({row.entry_point}, {row.kwargs})"]
        if row.ragen_name:
            lines.append(f"reproduces RAGEN config: {row.ragen_name}")
        lines.append(f"\n{base.instruction}\n")
        lines += [f"  {symbol}  {meaning}" for symbol, meaning in base.symbol_meanings.items()]
        names = base.action_names
        lines.append(f"\nactions: {', '.join(names) if names else 'free text'}")
        lines.append(f"chat budget: {budget_text(row.chat_budget)}")
        lines += _panel_lines(row.id)
        lines.append(f"\nseed {seed}:\n{observation}")
    finally:
        env.close()
    return "\n".join(lines) + "\n"


# The card block's markers (scripts/chat_budget_cards.py rewrites what lies between them).
BUDGET_BEGIN, BUDGET_END = "<!-- chat budget: scripts/chat_budget_cards.py -->", "<!-- end of chat budget -->"
# The card's column of each ChatBudget number field.
_BUDGET_LABELS = {
    "max_turns": "turns",
    "max_actions_per_turn": "actions per turn",
    "max_actions_per_episode": "actions per episode",
    "history_window": "turns shown",
    "max_response_chars": "reply chars",
    "max_new_tokens": "reply tokens",
}


def budget_text(budget: ChatBudget) -> str:
    """An id's declared chat budget in one line (``envs show``): ``name=value`` per declared field."""
    declared = budget.declared()
    if not declared:
        return "the chat defaults (nothing declared)"
    return ", ".join(f"{name}={value}" for name, value in declared.items()) + f" ({budget.basis})"


def budget_block(family: str) -> str:
    """The chat-budget table of a family's env card, markers included, from the id table.

    One row per id of ``family`` that declares a budget, a column per
    :data:`~ragen_bench.registry.BUDGET_FIELDS` entry; a field it leaves undeclared shows ``-``
    (the chat default, or the agent's own reply-token limit).
    """
    from ragen_bench.registry import BUDGET_FIELDS, all_entries

    rows = [row for row in all_entries() if row.family == family and row.chat_budget.declared()]
    lines = [BUDGET_BEGIN]
    if rows:
        labels = [_BUDGET_LABELS[name] for name in BUDGET_FIELDS]
        lines += [f"| id | {' | '.join(labels)} | basis |", "|---" * (len(labels) + 2) + "|"]
        for row in rows:
            budget = row.chat_budget
            cells = [str(value) if (value := getattr(budget, name)) is not None else "-" for name in BUDGET_FIELDS]
            lines.append(f"| `{row.id}` | {' | '.join(cells)} | {budget.basis} |")
        lines += [
            "",
            "`-`: not declared (the chat default of `configs/chat/default.yaml`, or the agent's own reply-token",
            "limit). An id not listed declares nothing.",
        ]
    else:
        lines.append("No id of this card declares a chat budget: the chat defaults (`configs/chat/default.yaml`) fit its")
        lines.append("tasks.")
    return "\n".join([*lines, BUDGET_END])


def _game_page(env_id: str, seed: int) -> str:
    """``envs show`` for a multi-agent game: rules, moves, opponents, panels, what ``seed`` decides."""
    from ragen_bench.games.opponents import OPPONENTS
    from ragen_bench.games.registry import game_entry, make_multiagent
    from ragen_bench.games.seeds import seed_view

    row = game_entry(env_id)
    view = seed_view(env_id, seed)[0]  # first: a bad seed is one error line, before any output
    game = make_multiagent(env_id, parallel=row.parallel)
    lines = [
        f"{env_id}  (ragen_bench.games.{row.family}, {'parallel' if row.parallel else 'turn-based'}, {row.kwargs})",
        f"\n{game.instruction}\n\nactions: {_game_moves(game.action_names)}",
        f"opponents: {', '.join(OPPONENTS[row.family])} (default {row.default_opponent})",
        *_panel_lines(env_id),
    ]
    return "\n".join(lines) + f"\n\nseed {seed}:\n{_readable(view)}"


def _game_moves(action_names: Sequence[str] | None) -> str:
    """A game's moves for ``envs show``: the names, or what a free-text game (TextArena's) takes."""
    if action_names is None:
        return "free text, one move a turn (the game judges it; its rules come with each seat's first view)"
    return ", ".join(action_names)


def _readable(view: str) -> str:
    """A game's seed view for a reader: the random draws it records (which pin the seed's tie-breaks
    and chance outcomes, for the panel checksum) become one line saying so."""
    from ragen_bench.games.seeds import CHANCE_DRAWS, TIE_BREAK_DRAWS

    kept = [line for line in view.splitlines() if not line.startswith((TIE_BREAK_DRAWS, CHANCE_DRAWS))]
    if len(kept) < len(view.splitlines()):
        kept.append("(the panel checksum also covers this seed's random draws: opponents' tie-breaks, dice, cards)")
    return "\n".join(kept) + "\n"


def _panel_lines(env_id: str) -> list[str]:
    from ragen_bench import panels

    lines = []
    for split in panels.available(env_id):
        panel = panels.load(env_id, split)
        lines.append(f"panel {split}: {len(panel.seeds)} seeds, checksum {panel.checksum}")
    return lines


@dataclass(frozen=True)
class PanelCheck:
    """One line of ``envs verify``: a panel regenerated (``ok``/``FAIL``), or an id not checked.

    ``split`` is None when the whole id was not checked because its extra is missing: a
    ``skip`` in the all-ids form, a ``FAIL`` when the id was asked for by name.
    """

    env_id: str
    split: str | None
    status: str  # "ok", "FAIL" or "skip"
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.status == "FAIL"

    @property
    def line(self) -> str:
        where = self.env_id if self.split is None else f"{self.env_id} {self.split}"
        return f"{self.status:<4} {where}" + (f": {self.detail}" if self.detail else "")


def verify_id(env_id: str, *, named: bool) -> list[PanelCheck]:
    """Each panel of ``env_id`` regenerated and compared with its checksum.

    Every split, not only the files present: a deleted panel is drift too.  A game without
    the ``games`` extra, or an id without its own extra, is one check with no split: skipped,
    or failed when it was ``named`` (asked for by name).  A library that fails to import or
    generate is a failure of its ids.
    """
    from ragen_bench import panels
    from ragen_bench.envs.reasoning_gym.env import DatasetError
    from ragen_bench.games.registry import GAME_IDS, game_entry

    # Regenerating a panel needs the env itself: without its extra, say which to install.
    hint = game_entry(env_id).missing_extra() if env_id in GAME_IDS else missing_extra(env_id)
    if hint:
        return [PanelCheck(env_id, None, "FAIL" if named else "skip", hint)]
    checks = []
    for split in panels.SPLITS:
        try:
            panels.load(env_id, split).verify()
        except (panels.PanelError, DatasetError) as error:
            checks.append(PanelCheck(env_id, split, "FAIL", str(error)))
        else:
            checks.append(PanelCheck(env_id, split, "ok"))
    return checks


def verify_report(env_ids: Sequence[str], out: Callable[[str], None], *, bar: bool | None = None) -> bool:
    """``envs verify``: check every panel of ``env_ids`` (all ids when empty); True when none failed.

    ``out`` gets the lines worth reading: each failure and skip, each ``ok`` only when the ids
    were named (a few; the 400-odd panels of all ids would bury a failure), then one closing
    line with the counts and the time.  The progress bar (a step per id, on stderr) is drawn
    on a terminal only, unless ``bar`` says otherwise.
    """
    from tqdm import tqdm

    from ragen_bench.games.registry import GAME_IDS
    from ragen_bench.registry import ENV_IDS

    named = bool(env_ids)
    ids = list(env_ids) or [*ENV_IDS, *GAME_IDS]
    start = time.monotonic()
    checks: list[PanelCheck] = []
    with tqdm(ids, unit="id", desc="envs verify", file=sys.stderr, leave=False,
              disable=None if bar is None else not bar) as progress:
        for env_id in progress:
            progress.set_postfix_str(env_id, refresh=False)
            for check in verify_id(env_id, named=named):
                checks.append(check)
                if named or check.status != "ok":
                    with tqdm.external_write_mode():  # the line above the bar, not through it
                        out(check.line)
    out(closing_line(checks, len(ids), time.monotonic() - start))
    return not any(check.failed for check in checks)


def closing_line(checks: Sequence[PanelCheck], ids: int, seconds: float) -> str:
    """``N panels of M ids verified in T``, then the failed panels and the ids not checked."""
    panels = [check for check in checks if check.split is not None]
    failed = sum(check.failed for check in panels)
    unchecked = len({check.env_id for check in checks if check.split is None})
    minutes, rest = divmod(round(seconds), 60)
    took = f"{minutes}m{rest:02d}s" if minutes else f"{seconds:.1f}s"
    notes = [f"{_count(failed, 'panel')} failed" if failed else "all match their checksums"] if panels else []
    if unchecked:
        notes.append(f"{_count(unchecked, 'id')} not checked (extra not installed)")
    line = f"{_count(len(panels), 'panel')} of {_count(ids - unchecked, 'id')} verified in {took}"
    return line + (": " + "; ".join(notes) if notes else "")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
