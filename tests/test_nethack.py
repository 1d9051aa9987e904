"""MiniHack's tasks and NetHack (RAGEN/MiniHack-*-v0, RAGEN/NetHack-v0): nle 1.3.0 behind our contract.

The text view, BALROG's progression and the env's bookkeeping (success, score, step limits, the
``--More--`` answer) are tested on hand-made states and need nothing installed.  The tests that play
need the ``nethack`` extra, which lives in its own virtualenv (nle pins gymnasium 1.2.0): they skip
without it, and ``scripts/setup_nethack_venv.sh`` runs this file there.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys

import gymnasium
import numpy as np
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench import catalog, panels
from ragen_bench.data import balrog
from ragen_bench.data import nethack as table
from ragen_bench.envs.base import MissingExtra
from ragen_bench.envs.nethack import TASKS, backend
from ragen_bench.envs.nethack.describe import STATUS_FIELDS, describe, nearby, relative_position, status_line, trimmed_map
from ragen_bench.registry import BUILTIN_IDS, ENV_IDS, chat_budget, entry
from tests.conftest import REPO_ROOT, run_python

IDS = [f"RAGEN/MiniHack-{task}-v0" for task in table.MINIHACK] + ["RAGEN/NetHack-v0"]
STATS = dict(x=5, y=2, strength=16, dexterity=14, constitution=12, intelligence=9, wisdom=10, charisma=8, score=0,
             hp=13, max_hp=15, depth=3, gold=7, energy=2, max_energy=4, armor_class=6, experience_level=2, time=41,
             hunger=1)


@pytest.fixture(scope="module")
def nle() -> None:
    """Skip when the extra is missing (it lives in .venv-nethack, where setup_nethack_venv.sh runs this file)."""
    if importlib.util.find_spec("nle") is None:
        pytest.skip(backend.INSTALL_HINT)


# -- the text view and BALROG's progression: pure functions ----------------------------------------


@pytest.mark.parametrize(("offset", "where"), [((0, 0), "where you stand"), ((1, 0), "1 step east"),
                                               ((-3, 0), "3 steps west"), ((0, -1), "1 step north"),
                                               ((2, 4), "2 steps east and 4 steps south")])
def test_relative_position(offset, where):
    assert relative_position(*offset) == where


def test_trimmed_map_cuts_to_what_is_drawn():
    rows = ["", "     ", "   ---- ", "   |.@.|", "    ...", "        "]
    assert trimmed_map(rows) == ["----", "|.@.|", " ..."]
    assert trimmed_map(["   ", ""]) == []


def test_nearby_names_each_thing_once_nearest_first_without_the_agent_or_plain_ground():
    cells = {(5, 2): "human samurai called Agent", (6, 2): "floor of a room", (4, 2): "wall",
             (9, 2): "molten lava", (8, 3): "molten lava", (8, 1): "molten lava", (5, 4): "newt",
             (2, 2): "staircase down", (0, 0): "dark part of a room"}
    assert nearby(cells, 5, 2) == ["newt 2 steps south", "staircase down 3 steps west",
                                   "molten lava 3 steps east and 1 step north (and 2 more)"]
    crowd = {(x, 0): f"boulder {x}" for x in range(1, 40)}
    assert len(nearby(crowd, 0, 0)) == 24 and nearby(crowd, 0, 0)[0] == "boulder 1 1 step east"


def test_trimmed_map_and_nearby_equal_the_plain_readings_on_random_screens():
    # trimmed_map tests rows with isspace (no stripped copies) and nearby keeps one nearest cell and a count a
    # name: both must equal the plain readings, NetHack's latin-1 whitespace (\\x1c, \\x85, \\xa0) included.
    rng = np.random.default_rng(31)
    for _ in range(300):
        rows = ["".join(rng.choice(list(" .|-#@\x1c\x85\xa0\t"), size=12, p=[.62, .1, .05, .05, .05, .05, .02, .02, .02, .02]))
                for _ in range(int(rng.integers(0, 8)))]
        drawn = [index for index, row in enumerate(rows) if row.strip()]
        body = rows[drawn[0]:drawn[-1] + 1] if drawn else []
        left = min((len(row) - len(row.lstrip()) for row in body if row.strip()), default=0)
        assert trimmed_map(rows) == [row[left:].rstrip() for row in body]
        names = ["newt", "jackal", "staircase down", "wall", "floor of a room", "boulder"]
        cells = {(int(x), int(y)): names[int(rng.integers(0, len(names)))] for x, y in rng.integers(0, 9, size=(12, 2))}
        x, y = (int(value) for value in rng.integers(0, 9, size=2))
        found: dict[str, list] = {}
        for (cx, cy), name in cells.items():
            if (cx, cy) != (x, y) and name not in ("wall", "floor of a room"):
                dx, dy = cx - x, cy - y
                found.setdefault(name, []).append((max(abs(dx), abs(dy)), abs(dx) + abs(dy), dy, dx))
        expected = sorted((min(keys), f"{name} {relative_position(min(keys)[3], min(keys)[2])}"
                           + (f" (and {len(keys) - 1} more)" if len(keys) > 1 else "")) for name, keys in found.items())
        assert nearby(cells, x, y) == [text for _, text in expected]


def test_status_line_and_the_whole_view():
    line = status_line(STATS)
    assert line == ("Dungeon level 3, HP 13/15, Pw 2/4, AC 6, experience level 2, turn 41, Str 16 Dex 14 Con 12 "
                    "Int 9 Wis 10 Cha 8, gold 7, Not hungry.")
    assert "?." in status_line({**STATS, "hunger": 9})
    text = describe(["", "  ----", "  |.@>|", "  ----"], {(5, 2): "staircase down"}, "Hello Agent. ", {**STATS, "x": 4})
    assert text.splitlines() == ["Message: Hello Agent.", "Map (you are @):", "----", "|.@>|", "----",
                                 "You see:", "- staircase down 1 step east", f"Status: {line}"]
    quiet = describe(["@"], {}, "", {**STATS, "x": 0, "y": 0})
    assert "Message: (none)" in quiet and "You see nothing of note nearby." in quiet


def test_progression_is_balrogs_table():
    assert len(table.DUNGEON_LEVEL_PROGRESSION) == 50 and len(table.EXPERIENCE_LEVEL_PROGRESSION) == 30
    for ladder in (table.DUNGEON_LEVEL_PROGRESSION, table.EXPERIENCE_LEVEL_PROGRESSION):
        assert ladder[0] == 0.0 and all(a < b for a, b in zip(ladder, ladder[1:])) and ladder[-1] < 1
    assert table.progression(1, 1) == 0.0
    assert table.progression(2, 1) == pytest.approx(0.015392269075361172)
    assert table.progression(2, 2) == pytest.approx(0.01847840456172601)  # the experience level counts more here
    assert table.progression(10, 3) == pytest.approx(0.12558597019922987)
    assert table.progression(-3, 30) == pytest.approx(0.7804561949196475)  # the Planes' depths are off the table
    assert table.progression(60, 0) == 0.0


# -- the ids ---------------------------------------------------------------------------------------


def test_ids_are_registered_without_importing_nle():
    out = run_python("import sys, gymnasium, ragen_bench\n"
                     "env = gymnasium.make('RAGEN/NetHack-v0')\n"
                     "print('nle' in sys.modules, 'minihack' in sys.modules, env.unwrapped.action_space.n)")
    assert out.split() == ["False", "False", "33"]
    assert [i for i in ENV_IDS if entry(i).family == "nethack"] == IDS
    assert all(entry(i).extra == "nethack" and entry(i).kwargs["task"] in TASKS for i in IDS)
    assert not set(IDS) & set(BUILTIN_IDS) and catalog.OWN_VENV_EXTRAS == {"nethack": "scripts/setup_nethack_venv.sh"}
    assert chat_budget("RAGEN/MiniHack-Quest-Easy-v0").max_turns == 100 and chat_budget("RAGEN/NetHack-v0").max_turns == 1000
    balrog_tasks = [task for task in balrog.TASKS if task.world == "minihack"]
    assert len(balrog_tasks) == 8 and {task.name for task in balrog_tasks if task.env_id is None} == {
        task.name for task in balrog_tasks if task.name not in {row[0] for row in table.MINIHACK.values()}}


def test_missing_library_names_the_extra(monkeypatch):
    for module in ("nle", "nle.nethack", "minihack"):
        monkeypatch.setitem(sys.modules, module, None)  # import now raises ModuleNotFoundError
    env = gymnasium.make("RAGEN/MiniHack-MazeWalk-9x9-v0")
    with pytest.raises(MissingExtra, match=r"ragen-bench\[nethack\].*setup_nethack_venv"):
        env.reset(seed=0)
    real = importlib.util.find_spec
    monkeypatch.setattr(catalog.importlib.util, "find_spec", lambda n: None if n == "nle" else real(n))
    assert catalog.missing_extra("RAGEN/NetHack-v0") == backend.INSTALL_HINT


def test_bad_task_is_refused_up_front():
    with pytest.raises(ValueError, match="NetHackEnv: task"):
        gymnasium.make("RAGEN/NetHack-v0", task="Boxoban-Hard")


# -- the env's bookkeeping, on a stand-in for the library env --------------------------------------


class FakeLibrary:
    """Stands in for nle's env: offers BALROG's keys, records the keys pressed, plays a script.

    ``script(step, key)`` -> (reward, terminated, depth, clock advances, shows --More--); the screen
    goes blank when the game ends, as NetHack's does.
    """

    def __init__(self, script):
        self.actions = list(table.ACTION_KEYS.values())
        self.script, self.pressed, self.seeds = script, [], []
        self._depth, self._clock, self._more, self._over = 1, 1, False, False

    def seed(self, **seeds):
        self.seeds.append(seeds)

    def _observation(self):
        blstats = np.zeros(27, dtype=np.int64)
        blstats[STATUS_FIELDS["x"]], blstats[STATUS_FIELDS["y"]] = 1, 1
        blstats[STATUS_FIELDS["depth"]], blstats[STATUS_FIELDS["time"]] = self._depth, self._clock
        blstats[STATUS_FIELDS["experience_level"]] = 1
        chars = np.full((21, 79), ord(" "), dtype=np.uint8)
        chars[1, 1] = ord(" " if self._over else "@")
        tty = np.full((24, 80), ord(" "), dtype=np.uint8)
        if self._more:
            tty[0, :8] = list(b"--More--")
        return {"blstats": blstats, "chars": chars, "glyphs": np.zeros((21, 79), dtype=np.int16),
                "message": np.zeros(256, dtype=np.uint8), "screen_descriptions": np.zeros((21, 79, 80), dtype=np.uint8),
                "tty_chars": tty}

    def reset(self):
        self._depth, self._clock, self._more, self._over, self.pressed = 1, 1, False, False, []
        return self._observation(), {}

    def step(self, index):
        key = self.actions[index]
        self.pressed.append(key)
        reward, self._over, self._depth, advances, self._more = self.script(len(self.pressed), key)
        self._clock += advances
        return self._observation(), reward, self._over, False, {"end_status": Status("TASK_SUCCESSFUL")}


class Status:
    def __init__(self, name):
        self.name = name


def _fake_env(monkeypatch, task, script):
    library = FakeLibrary(script)
    monkeypatch.setattr(backend, "make", lambda name: library)
    monkeypatch.setattr(backend, "plain_glyphs", lambda: np.zeros(1, dtype=bool))  # the stand-in's glyphs are all 0
    env = gymnasium.make(f"RAGEN/{'NetHack' if task == 'NetHack' else 'MiniHack-' + task}-v0").unwrapped
    return env, library


def test_minihack_success_is_a_step_paying_one(monkeypatch):
    env, library = _fake_env(monkeypatch, "MazeWalk-9x9", lambda n, key: (1.0 if n == 3 else -0.01, n == 3, 1, 1, False))
    _, info = env.reset(seed=12)
    assert library.seeds == [dict(core=12, disp=12, reseed=False, lgen=12)] and info["progress"] == 0.0
    assert env.step(0)[1:4] == (-0.01, False, False)
    env.step(1)
    before = env.render_text()
    text, reward, terminated, truncated, info = env.step(2)
    assert (reward, terminated, truncated, info["success"], info["progress"]) == (1.0, True, False, True, 1.0)
    # the blanked end screen: the last drawn state, the message saying why the game ended
    assert text.splitlines() == ["Message: The game is over (task successful).", *before.splitlines()[1:]]
    assert library.pressed == [table.ACTION_KEYS[name] for name in ("north", "east", "south")]


def test_minihack_ends_after_balrogs_100_steps(monkeypatch):
    env, _ = _fake_env(monkeypatch, "Corridor-R3", lambda n, key: (0.0, False, 1, 1, False))
    env.reset(seed=0)
    ends = [env.step(n % 11)[3] for n in range(100)]
    assert ends == [False] * 99 + [True] and env.episode_finished


def test_nethack_scores_the_deepest_level_and_stops_when_the_clock_stands_still(monkeypatch):
    def script(n, key):  # down to level 3 by step 4, back up to 2; the clock stops after step 5
        return 0.0, False, {1: 1, 2: 2, 3: 2}.get(n, 3 if n < 6 else 2), int(n <= 5), False

    env, _ = _fake_env(monkeypatch, "NetHack", script)
    env.reset(seed=0)
    infos = [env.step(0) for _ in range(5 + table.NETHACK_NO_PROGRESS)]
    assert [info["progress"] for *_, info in infos[:4]] == pytest.approx([0.0] + [table.progression(2, 1)] * 2 + [
        table.progression(3, 1)])
    assert infos[-1][4]["progress"] == pytest.approx(table.progression(3, 1)) and infos[-1][4]["depth"] == 2
    assert [truncated for *_, truncated, _ in infos] == [False] * (4 + table.NETHACK_NO_PROGRESS) + [True]


def test_more_prompts_are_answered_where_the_task_has_the_more_action(monkeypatch):
    def script(n, key):
        return 0.0, False, 1, 1, n == 1  # the first key raises a --More--, the next clears it

    env, library = _fake_env(monkeypatch, "Quest-Easy", script)
    env.reset(seed=0)
    env.step(env.action_names.index("search"))
    assert library.pressed == [table.ACTION_KEYS["search"], table.ACTION_KEYS["more"]]
    maze, library = _fake_env(monkeypatch, "MazeWalk-9x9", script)
    maze.reset(seed=0)
    maze.step(0)
    assert library.pressed == [table.ACTION_KEYS["north"]]  # no "more" action there: the prompt stays


# -- with the library (the nethack extra's venv) ---------------------------------------------------


def test_the_tables_match_the_library(nle):
    from nle import nethack
    from nle.nethack import actions as nle_actions

    assert STATUS_FIELDS == {name: getattr(nethack, f"NLE_BL_{key}") for name, key in (
        ("x", "X"), ("y", "Y"), ("strength", "STR125"), ("dexterity", "DEX"), ("constitution", "CON"),
        ("intelligence", "INT"), ("wisdom", "WIS"), ("charisma", "CHA"), ("score", "SCORE"), ("hp", "HP"),
        ("max_hp", "HPMAX"), ("depth", "DEPTH"), ("gold", "GOLD"), ("energy", "ENE"), ("max_energy", "ENEMAX"),
        ("armor_class", "AC"), ("experience_level", "XP"), ("time", "TIME"), ("hunger", "HUNGER"))}
    assert table.ACTION_KEYS["force"] == nle_actions.Command.FORCE and table.ACTION_KEYS["kick"] == nle_actions.Command.KICK
    assert table.ACTION_KEYS["loot"] == nle_actions.Command.LOOT and table.ACTION_KEYS["pray"] == nle_actions.Command.PRAY
    assert table.ACTION_KEYS["more"] == nle_actions.MiscAction.MORE and table.ACTION_KEYS["far west"] == ord("H")
    for task in TASKS:  # each task offers exactly the BALROG names the library's action list holds, in its order
        library = backend.make(task)
        offered = [name for key in library.actions for name, k in table.ACTION_KEYS.items() if k == int(key)]
        assert list(gymnasium.make("RAGEN/NetHack-v0", task=task).unwrapped.action_names) == offered, task


def episodes_digest() -> str:
    """Every id on two test seeds, each played 40 steps cycling through its actions, as one digest."""
    digest = hashlib.sha256()
    for env_id in IDS:
        env = gymnasium.make(env_id).unwrapped
        for seed in panels.load(env_id, "test").seeds[:2]:
            digest.update(repr(env.reset(seed=seed)).encode())
            for step in range(40):
                if not env.episode_finished:
                    digest.update(repr(env.step((step * 5) % env.action_space.n)).encode())
    return digest.hexdigest()


def _clock_shim(tmp_path) -> str:
    """A preloaded library that sets the C clock (time, gettimeofday) to $FAKE_EPOCH: NetHack's idea of today."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("needs a C compiler to fake the date")
    source = tmp_path / "clock.c"
    source.write_text(
        "#include <stdlib.h>\n#include <time.h>\n#include <sys/time.h>\n"
        "static time_t fake(void) { const char *s = getenv(\"FAKE_EPOCH\"); return s ? (time_t)atoll(s) : 0; }\n"
        "time_t time(time_t *t) { time_t v = fake(); if (t) *t = v; return v; }\n"
        "int gettimeofday(struct timeval *tv, void *tz) { (void)tz; if (tv) { tv->tv_sec = fake(); tv->tv_usec = 0; }"
        " return 0; }\n")
    library = tmp_path / "clock.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return str(library)


def _on_date(shim: str, epoch: int, code: str) -> str:
    env = dict(os.environ, LD_PRELOAD=shim, FAKE_EPOCH=str(epoch), PYTHONWARNINGS="ignore")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO_ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


# NetHack's first message for one seed when the date is not fixed: it depends on the moon (2023-11-14
# had a new moon, 2023-12-07 did not), which proves the shim moves NetHack's clock.
_UNFIXED = ("import gymnasium, nle\nenv = gymnasium.make('NetHackScore-v0').unwrapped\n"
            "env.seed(core=3, disp=3, reseed=False)\nprint(bytes(env.reset()[0]['message']).decode().strip(chr(0)))")


def test_same_episodes_in_fresh_processes_and_on_other_dates(nle, tmp_path):
    shim = _clock_shim(tmp_path)
    assert "New moon" in _on_date(shim, 1_700_000_000, _UNFIXED)
    assert "New moon" not in _on_date(shim, 1_701_900_000, _UNFIXED)
    here = episodes_digest()
    code = "from tests.test_nethack import episodes_digest; print(episodes_digest())"
    assert run_python(code, hash_seed="4242").strip() == here
    for epoch in (1_700_000_000, 1_701_900_000):
        assert _on_date(shim, epoch, code) == here


def test_seeds_differ_and_repeat(nle):
    env = gymnasium.make("RAGEN/MiniHack-MazeWalk-15x15-v0").unwrapped
    first = [env.reset(seed=seed)[0] for seed in range(8)]
    assert len(set(first)) == 8 and [env.reset(seed=seed)[0] for seed in range(8)] == first


def test_picture_is_netHacks_tiles_of_the_drawn_map(nle):
    env = gymnasium.make("RAGEN/MiniHack-Corridor-R3-v0", render_mode="rgb_array").unwrapped
    env.reset(seed=3)
    picture = env.render()
    rows = [row for row in env.render_text().splitlines()[2:] if not row.startswith(("You see", "- ", "Status:"))]
    assert picture.dtype == np.uint8 and picture.flags.c_contiguous
    assert picture.shape == (16 * len(rows), 16 * max(len(row) for row in rows), 3)
    assert len(np.unique(picture.reshape(-1, 3), axis=0)) > 4
    assert env.observation_space.contains(env.render_text())


@pytest.mark.parametrize("env_id", IDS)
def test_panels_regenerate(nle, env_id):
    for split in ("train", "val", "test"):
        panels.load(env_id, split).verify()
    held_out = {seed for split in ("val", "test") for seed in panels.load(env_id, split).seeds}
    assert not held_out & set(panels.load(env_id, "train").seeds)


# Seed 125's explorer reaches a shop by step 920.  NetHack names shopkeepers from the game's start time
# (ubirthday / 257): with nle's own library the name follows the clock (the control), with ours it does not.
_SHOPKEEPERS = ("import gymnasium, ragen_bench\n{control}env = gymnasium.make('RAGEN/NetHack-v0').unwrapped\n"
                "env.reset(seed=125)\nseen = set()\nfor _ in range(920):\n"
                "    seen.update(line for line in env.step(env.baseline_action())[0].splitlines() if 'peaceful' in line)\n"
                "print(sorted(seen))")
_NLE_AS_SHIPPED = "import nle.nethack.nethack as library\nlibrary.RAGEN_FIXED_CLOCK = True\n"


def test_shopkeepers_are_named_alike_whatever_the_clock(nle, tmp_path):
    shim = _clock_shim(tmp_path)
    shipped = {_on_date(shim, epoch, _SHOPKEEPERS.format(control=_NLE_AS_SHIPPED)) for epoch in (1_600_000_000, 1_701_900_000)}
    assert len(shipped) == 2 and all("peaceful" in names for names in shipped), shipped
    ours = {_on_date(shim, epoch, _SHOPKEEPERS.format(control="")) for epoch in (1_600_000_000, 1_701_900_000)}
    assert len(ours) == 1 and "peaceful" in next(iter(ours)), ours


def test_a_library_other_than_nle_1_3_0_s_is_refused(tmp_path):
    other = tmp_path / "libnethack.so"
    other.write_bytes(b"\x7fELF not nle's")
    with pytest.raises(RuntimeError, match="is not nle 1.3.0's x86-64 library"):
        backend.fixed_clock_library(other)
