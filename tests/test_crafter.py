"""RAGEN/Crafter-v0: crafter 1.8.3 behind our contract, in words, the same in every process.

The text view (``describe``) is tested on hand-made maps and needs nothing installed; the tests
that play need the ``crafter`` extra and skip without it (fail in CI), saying what to install.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import random
import sys

import gymnasium
import numpy as np
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench import catalog, panels
from ragen_bench.data.balrog import EPISODES
from ragen_bench.data.crafter import ACHIEVEMENTS, BALROG_STEPS
from ragen_bench.envs.base import MissingExtra
from ragen_bench.envs.crafter import backend
from ragen_bench.envs.crafter.collector import Collector
from ragen_bench.envs.crafter.describe import (
    NAMES, OFF_MAP, cells_around, describe, describe_cells, relative_position, window_of,
)
from ragen_bench.envs.crafter.env import ACTION_MEANINGS, ACTION_NAMES
from ragen_bench.registry import BUILTIN_IDS, chat_budget, entry
from tests.conftest import in_ci, run_python

ID = "RAGEN/Crafter-v0"
# Test-panel seeds whose first observation the default run regenerates (RAGEN_BENCH_FULL_SWEEPS=1: every panel, 25 s a split).
SAMPLE = 16
FULL_SWEEPS = os.environ.get("RAGEN_BENCH_FULL_SWEEPS") == "1"
FULL = {"health": 9, "food": 9, "drink": 9, "energy": 9}


@pytest.fixture(scope="module")
def crafter() -> None:
    """Skip (fail in CI) when the extra is missing."""
    if importlib.util.find_spec("crafter") is None:
        if in_ci():
            pytest.fail(f"{backend.INSTALL_HINT}; CI=true, so this is a failure, not a skip")
        pytest.skip(backend.INSTALL_HINT)


def _window(*cells: tuple[int, int, str], fill: str = "grass") -> np.ndarray:
    window = np.full((9, 7), NAMES.index(fill), dtype=np.int64)
    window[4, 3] = NAMES.index("player")
    for x, y, kind in cells:
        window[x, y] = OFF_MAP if kind == "off" else NAMES.index(kind)
    return window


# -- the text view, a pure function ---------------------------------------------------------------


@pytest.mark.parametrize(("dx", "dy", "where"), [
    (0, -1, "1 step north"), (0, 3, "3 steps south"), (-2, 0, "2 steps west"), (1, -2, "2 steps north and 1 step east"),
    (0, 0, "where you stand"),
])
def test_relative_position(dx, dy, where):
    assert relative_position(dx, dy) == where


def test_describe_names_what_is_in_front_the_vitals_inventory_and_achievements():
    text = describe(_window((4, 2, "tree")), (0, -1), {**FULL, "food": 3, "wood": 2, "wood_pickaxe": 1, "stone": 0},
                    sleeping=False, unlocked=["collect_wood", "place_table"])
    lines = text.splitlines()
    assert lines[0] == "You face north; in front of you: tree."
    assert lines[1] == "Vitals: health 9/9, food 3/9, drink 9/9, energy 9/9."
    assert lines[2] == "Inventory: 2 wood, 1 wood pickaxe."
    assert lines[-1] == "Achievements unlocked (2 of 22): collect wood, place table."


def test_describe_lists_the_nearest_of_each_kind_nearest_first_with_counts():
    window = _window((4, 0, "water"), (0, 3, "water"), (6, 4, "cow"), (8, 6, "zombie"), (3, 3, "tree"))
    text = describe(window, (0, 1), FULL, sleeping=True, unlocked=[])
    seen = text.splitlines()[4:-1]
    assert seen == ["- grass 1 step north (57 in view)", "- tree 1 step west", "- cow 1 step south and 2 steps east",
                    "- water 3 steps north (2 in view)", "- zombie 3 steps south and 4 steps east"]  # ties: by name
    assert "You are asleep." in text and "Inventory: nothing." in text and "(0 of 22): none." in text


def test_window_beyond_the_map_edge_is_off_map_and_never_listed():
    semantic = np.full((64, 64), NAMES.index("sand"))
    semantic[0, 63] = NAMES.index("player")
    window = window_of(semantic, (0, 63))
    assert (window[:4] == OFF_MAP).all() and (window[:, 4:] == OFF_MAP).all() and (window[4:, :4] != OFF_MAP).all()
    text = describe(window, (-1, 0), FULL, sleeping=False, unlocked=[])
    assert "in front of you: the edge of the world." in text
    assert "- sand 1 step north (19 in view)" in text


def test_describe_s_tables_are_crafter_s(crafter):
    import crafter as library

    env = library.Env(seed=0)
    ids = {**env._world._mat_ids, **{cls.__name__.lower(): index for cls, index in env._sem_view._obj_ids.items()}}
    assert {("nothing" if name is None else name): index for name, index in ids.items()} == {
        name: index for index, name in enumerate(NAMES)}
    assert tuple(library.constants.achievements) == ACHIEVEMENTS
    assert [name.lower().replace(" ", "_") for name in ACTION_NAMES] == [
        action.replace("move_left", "move_west").replace("move_right", "move_east").replace("move_up", "move_north")
        .replace("move_down", "move_south") for action in library.constants.actions]
    place, make = library.constants.place, library.constants.make
    assert place["table"]["uses"] == {"wood": 2} and "(2 wood)" in ACTION_MEANINGS[8]
    assert place["furnace"]["uses"] == {"stone": 4} and "(4 stone)" in ACTION_MEANINGS[9]
    assert make["iron_pickaxe"]["uses"] == {"wood": 1, "coal": 1, "iron": 1} and "1 coal, 1 iron" in ACTION_MEANINGS[13]



def _nearby_cell_by_cell(window: np.ndarray) -> list[str]:
    """The "You see" lines read the plain way, cell by cell: what the byte-scanning view must equal."""
    nearest: dict[int, tuple[int, int, int]] = {}
    counts: dict[int, int] = {}
    for x in range(9):
        for y in range(7):
            kind = int(window[x, y])
            if kind == OFF_MAP or (kind == NAMES.index("player") and (x, y) == (4, 3)):
                continue
            counts[kind] = counts.get(kind, 0) + 1
            nearest[kind] = min(nearest.get(kind, (99, 0, 0)), (abs(x - 4) + abs(y - 3), y, x))
    ordered = sorted(nearest.items(), key=lambda item: (item[1][0], NAMES[item[0]]))
    return [f"- {NAMES[kind]} {relative_position(x - 4, y - 3)}" + (f" ({counts[kind]} in view)" if counts[kind] > 1 else "")
            for kind, (_, y, x) in ordered]


def test_describe_equals_a_cell_by_cell_reading_on_random_maps():
    # The view reads the window nearest first as bytes, straight from the map where it can, and keeps the
    # status lines by their inputs: any slip shows here as a different text.
    rng = np.random.default_rng(31)
    kinds = [index for index, name in enumerate(NAMES) if name != "player"]
    for trial in range(300):
        semantic = rng.choice(kinds, size=(20, 16)).astype(np.uint8)
        semantic[rng.random((20, 16)) < 0.6] = NAMES.index("grass")
        position = (int(rng.integers(0, 20)), int(rng.integers(0, 16)))  # near the edges too
        semantic[position] = NAMES.index("player")
        facing = ((0, 1), (0, -1), (1, 0), (-1, 0))[trial % 4]
        inventory = {**FULL, "food": int(rng.integers(0, 10)), "wood": int(rng.integers(0, 3)), "sapling": trial % 2}
        unlocked = list(ACHIEVEMENTS[: trial % 5])
        window = window_of(semantic, position)
        text = describe(window, facing, inventory, sleeping=bool(trial % 3 == 0), unlocked=unlocked)
        seen = text.splitlines()[4:-1]
        assert seen == _nearby_cell_by_cell(window), (trial, position)
        assert text.splitlines()[2] == f"Inventory: {', '.join(f'{c} {n}' for n, c in inventory.items() if n not in FULL and c) or 'nothing'}."
        assert f"food {inventory['food']}/9" in text.splitlines()[1] and ("asleep" in text) == (trial % 3 == 0)
        # The env's path (cells taken from the map, another dtype falling back to the window) gives the same text.
        for semantic_map in (semantic, semantic.astype(np.int64)):
            cells = cells_around(semantic_map, position)
            assert describe_cells(cells, facing, inventory, sleeping=bool(trial % 3 == 0), unlocked=unlocked) == text

# -- registration, the missing extra, BALROG's protocol ------------------------------------------


def test_the_id_is_registered_without_importing_crafter():
    out = run_python("import sys, gymnasium, ragen_bench\nenv = gymnasium.make('RAGEN/Crafter-v0')\nprint('crafter' in sys.modules)")
    assert out.strip() == "False"
    assert entry(ID).extra == "crafter" and ID not in BUILTIN_IDS


def test_missing_library_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "crafter", None)  # import now raises ModuleNotFoundError
    monkeypatch.setattr(backend, "_CLASS", None)
    with pytest.raises(MissingExtra, match=r"ragen-bench\[crafter\]"):
        gymnasium.make(ID).reset(seed=0)
    real = importlib.util.find_spec
    monkeypatch.setattr(catalog.importlib.util, "find_spec", lambda n: None if n == "crafter" else real(n))
    assert catalog.missing_extra(ID) == backend.INSTALL_HINT


def test_bad_max_steps_is_refused_up_front():
    with pytest.raises(ValueError, match="CrafterEnv: max_steps"):
        gymnasium.make(ID, max_steps=10_001)


def test_the_chat_budget_is_balrog_s_protocol():
    budget = chat_budget(ID)
    assert budget.max_turns == budget.max_actions_per_episode == BALROG_STEPS == 2000
    assert budget.max_actions_per_turn == 1 and EPISODES["crafter"] == 10


# -- playing --------------------------------------------------------------------------------------


def test_the_world_reward_and_achievements_are_crafter_s(crafter):
    import crafter as library

    env = gymnasium.make(ID).unwrapped
    _, info = env.reset(seed=321)
    own = library.Env(seed=321)
    own.reset()
    assert (env.world._sem_view() == own._sem_view()).all()
    assert info["progress"] == 0.0 and info["achievements"] == dict.fromkeys(ACHIEVEMENTS, 0)
    for action in [5, 1, 1, 5, 3, 3, 5, 2, 5]:  # before step 10, when crafter first balances creatures
        text, reward, terminated, truncated, info = env.step(action)
        _, own_reward, _, own_info = own.step(action)
        assert reward == own_reward and info["achievements"] == own_info["achievements"]
        assert (own_info["semantic"] == env.world._sem_view()).all()
        assert info["progress"] == pytest.approx(sum(map(bool, info["achievements"].values())) / 22)


def test_through_the_night_the_episode_is_crafter_s_at_balrog_s_picture_size(crafter):
    """Ours draws no picture a step but takes the numbers crafter's night noise would: the same episode as a
    crafter Env (size 256) that draws every step, ours balancing creatures in position order too."""
    import crafter as library

    class Drawing(backend._ordered_class()):  # crafter's own observation: the picture, drawn every step
        _obs = library.Env._obs

    env, own = gymnasium.make(ID).unwrapped, Drawing(seed=0, size=(256, 256))
    env.reset(seed=77)
    own.reset_to(77)
    rng, nights = random.Random(0), 0
    for _ in range(320):  # night falls around step 150
        action = rng.choice([1, 2, 3, 4, 5, 5, 0])
        _, reward, *_, info = env.step(action)
        picture, own_reward, done, own_info = own.step(action)
        nights += env.world._world.daylight < 0.5
        assert picture.shape == (256, 256, 3) and (reward, info["achievements"]) == (own_reward, own_info["achievements"])
        assert (env.world._sem_view() == own_info["semantic"]).all()
        if done:
            break
    assert nights >= 10


def test_drawing_the_picture_never_changes_the_episode(crafter):
    plain, drawn = gymnasium.make(ID).unwrapped, gymnasium.make(ID, render_mode="rgb_array").unwrapped
    plain.reset(seed=78)
    drawn.reset(seed=78)
    rng = random.Random(1)
    for _ in range(250):
        action = rng.choice([1, 2, 3, 4, 5, 0])
        drawn.render()
        assert plain.step(action) == drawn.step(action)
        if plain.episode_finished:
            break


def test_max_steps_truncates_and_a_picture_is_crafter_s(crafter):
    env = gymnasium.make(ID, max_steps=3, render_mode="rgb_array").unwrapped
    env.reset(seed=5)
    picture = env.render()
    assert picture.shape == (256, 256, 3) and picture.dtype == np.uint8
    assert [env.step(0)[2:4] for _ in range(3)] == [(False, False), (False, False), (False, True)]


def test_balancing_sees_creatures_in_position_order(crafter, monkeypatch):
    import crafter as library

    seen = []
    real = library.Env._balance_object

    def record(self, chunk, objs, *args):
        seen.append([tuple(obj.pos) for obj in objs])
        return real(self, chunk, objs, *args)

    monkeypatch.setattr(library.Env, "_balance_object", record)
    env = gymnasium.make(ID).unwrapped
    env.reset(seed=9)
    for _ in range(10):
        env.step(0)
    assert any(len(positions) > 1 for positions in seen)
    assert all(positions == sorted(positions) for positions in seen)


def test_the_collector_beats_random_on_test_seeds(crafter):
    env = gymnasium.make(ID).unwrapped
    scores = {"collector": [], "random": []}
    for seed in panels.load(ID, "test").seeds[:2]:
        for name, agent in (("collector", Collector(seed).act), ("random", _random_agent(seed))):
            env.reset(seed=seed)
            info = {"progress": 0.0}
            while not env.episode_finished and env.world._step < 300:
                info = env.step(agent(env))[4]
            scores[name].append(info["progress"])
    assert min(scores["collector"]) > max(scores["random"]), scores


def _random_agent(seed: int):
    rng = random.Random(seed)
    return lambda env: rng.randrange(len(ACTION_NAMES))


def episodes_digest() -> str:
    """Three test seeds, 400 steps each of a seeded random walk: texts, rewards and infos, as one digest."""
    digest = hashlib.sha256()
    env = gymnasium.make(ID).unwrapped
    for seed in panels.load(ID, "test").seeds[:3]:
        digest.update(env.reset(seed=seed)[0].encode())
        rng = random.Random(seed)
        for _ in range(400):
            if env.episode_finished:
                break
            digest.update(repr(env.step(rng.choice([1, 2, 3, 4, 5, 5, 0]))).encode())
    return digest.hexdigest()


def test_same_episodes_in_a_fresh_process(crafter):
    fresh = run_python("from tests.test_crafter import episodes_digest; print(episodes_digest())", hash_seed="4242")
    assert fresh.strip() == episodes_digest()


def test_the_same_worlds_without_numba(crafter):
    code = ("import sys, hashlib\nsys.modules['numba'] = None\nimport gymnasium, ragen_bench\n"
            "env = gymnasium.make('RAGEN/Crafter-v0').unwrapped\n"
            "for seed in (123, 124):\n    env.reset(seed=seed)\n"
            "    print(hashlib.sha256(env.world._sem_view().tobytes()).hexdigest())\n")
    env = gymnasium.make(ID).unwrapped
    expected = []
    for seed in (123, 124):
        env.reset(seed=seed)
        expected.append(hashlib.sha256(env.world._sem_view().tobytes()).hexdigest())
    assert run_python(code).split() == expected


def test_panels_regenerate(crafter):
    test = panels.load(ID, "test")
    if FULL_SWEEPS:
        for split in panels.SPLITS:
            panels.load(ID, split).verify()
    for seed, digest in list(zip(test.seeds, test.obs_sha256))[:SAMPLE]:
        assert panels.observation_sha256(panels.initial_observation(ID, seed)) == digest, seed
    held_out = {seed for split in ("val", "test") for seed in panels.load(ID, split).seeds}
    assert not held_out & set(panels.load(ID, "train").seeds)
