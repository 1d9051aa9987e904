"""BabyAI ids (RAGEN/BabyAI-<level>-v0): minigrid 3.2.0's levels behind our contract, in words.

The text view (``describe_view``) is tested on hand-made views and needs nothing installed; the
tests that play need the ``babyai`` extra and skip without it (fail in CI), saying what to install.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import sys

import gymnasium
import numpy as np
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench import catalog, panels
from ragen_bench.envs.babyai import LEVELS, backend
from ragen_bench.envs.babyai.describe import COLORS, DOOR_STATES, OBJECTS, describe_view, relative_position
from ragen_bench.envs.babyai.env import ACTION_NAMES
from ragen_bench.envs.base import MissingExtra
from ragen_bench.registry import BUILTIN_IDS, ENV_IDS, chat_budget, entry
from tests.conftest import in_ci, run_python

IDS = [f"RAGEN/BabyAI-{level}-v0" for level in LEVELS]
SAMPLE = 16  # test-panel seeds each id plays in the default run (the slow sweep plays all 256)


@pytest.fixture(scope="module")
def minigrid() -> None:
    """Skip (fail in CI) when the extra is missing."""
    if importlib.util.find_spec("minigrid") is None:
        if in_ci():
            pytest.fail(f"{backend.INSTALL_HINT}; CI=true, so this is a failure, not a skip")
        pytest.skip(backend.INSTALL_HINT)


def _view(*cells: tuple[int, int, str, str, int]) -> np.ndarray:
    """A 7x7 view of empty floor holding ``(x, y, kind, colour, state)`` cells."""
    image = np.zeros((7, 7, 3), dtype=np.uint8)
    image[:, :, 0] = OBJECTS.index("empty")
    for x, y, kind, color, state in cells:
        image[x, y] = (OBJECTS.index(kind), COLORS.index(color), state)
    return image


# -- the text view, a pure function ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("cell", "where"),
    [((3, 5), "1 step forward"), ((3, 2), "4 steps forward"), ((1, 6), "2 steps to the left"),
     ((4, 6), "1 step to the right"), ((0, 0), "6 steps forward and 3 steps to the left"),
     ((6, 4), "2 steps forward and 3 steps to the right"), ((3, 6), "where you stand")],
)
def test_relative_position(cell, where):
    assert relative_position(*cell) == where


def test_describe_lists_objects_nearest_first_with_colour_and_door_state():
    image = _view((3, 3, "ball", "red", 0), (1, 5, "key", "blue", 0), (5, 2, "door", "yellow", 2),
                  (4, 5, "box", "grey", 0), (2, 1, "door", "green", 0))
    text = describe_view(image, 3, "go to the red ball", None)
    assert text == "\n".join([
        "Mission: go to the red ball",
        "You face north and carry nothing.",
        "You see:",
        "- a grey box 1 step forward and 1 step to the right",
        "- a blue key 1 step forward and 2 steps to the left",
        "- a red ball 3 steps forward",
        "- an open green door 5 steps forward and 1 step to the left",  # as near (6 steps), further left
        "- a locked yellow door 4 steps forward and 2 steps to the right",
    ])


def test_describe_names_the_nearest_wall_ahead_left_and_right_unless_something_is_in_the_way():
    walls = [(3, y, "wall", "grey", 0) for y in (1, 0)] + [(0, 6, "wall", "grey", 0), (6, 6, "wall", "grey", 0)]
    text = describe_view(_view(*walls, (5, 6, "ball", "purple", 0)), 0, "m", "a red key")
    assert text.splitlines()[1:] == [
        "You face east and carry a red key.",
        "You see:",
        "- a purple ball 2 steps to the right",
        "- a wall 5 steps forward",
        "- a wall 3 steps to the left",
    ]


def test_describe_leaves_out_unseen_cells_floor_and_the_agent_s_own_cell():
    image = _view((3, 6, "key", "red", 0))  # what the agent carries shows in its own cell
    image[:, :3, 0] = OBJECTS.index("unseen")
    assert describe_view(image, 1, "open the door", "a red key").splitlines()[1:] == [
        "You face south and carry a red key.",
        "You see nothing but floor.",
    ]


def _describe_cell_by_cell(image: np.ndarray, direction: int, mission: str, carrying: str | None) -> str:
    """The text view read the plain way, cell by cell: what the byte-scanning ``describe_view`` must equal."""
    from ragen_bench.envs.babyai.describe import object_name

    listed, walls = [], []
    for x in range(7):
        for y in range(7):
            kind = OBJECTS[int(image[x, y, 0])]
            if (x, y) != (3, 6) and kind not in ("unseen", "empty", "floor", "agent", "wall"):
                where = relative_position(x, y)
                listed.append(((6 - y) + abs(x - 3), x, f"- {object_name(*map(int, image[x, y]))} {where}"))
    for line in ([(3, y) for y in range(5, -1, -1)], [(x, 6) for x in range(2, -1, -1)], [(x, 6) for x in range(4, 7)]):
        for x, y in line:
            kind = OBJECTS[int(image[x, y, 0])]
            if kind == "wall":
                walls.append(f"- a wall {relative_position(x, y)}")
            if kind not in ("empty", "floor"):
                break
    lines = [text for *_, text in sorted(listed)] + walls
    seen = ["You see:", *lines] if lines else ["You see nothing but floor."]
    heading = ("east", "south", "west", "north")[direction]
    return "\n".join([f"Mission: {mission}", f"You face {heading} and carry {carrying or 'nothing'}.", *seen])


def test_describe_equals_a_cell_by_cell_reading_on_random_views():
    # describe_view scans the view's bytes and keeps each (cell, content) line: any slip in its cell
    # numbering, its order or its cache shows here as a different text.
    rng = np.random.default_rng(31)
    for trial in range(400):
        image = _view()
        image[:, :, 0] = rng.choice([OBJECTS.index("empty"), OBJECTS.index("floor")], size=(7, 7))
        for _ in range(int(rng.integers(0, 14))):
            x, y = rng.integers(0, 7, size=2)
            image[x, y] = (rng.integers(0, len(OBJECTS)), rng.integers(0, len(COLORS)), rng.integers(0, len(DOOR_STATES)))
        direction, carrying = int(trial % 4), (None, "a red key")[trial % 2]
        expected = _describe_cell_by_cell(image, direction, "m", carrying)
        assert describe_view(image, direction, "m", carrying) == expected
        # Hand-made views of another integer type, or not contiguous, read the same.
        assert describe_view(image.astype(np.int64), direction, "m", carrying) == expected
        assert describe_view(np.asfortranarray(image), direction, "m", carrying) == expected


def test_describe_s_tables_are_minigrid_s(minigrid):
    from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX, STATE_TO_IDX

    assert [OBJECT_TO_IDX[name] for name in OBJECTS] == list(range(len(OBJECTS)))
    assert [COLOR_TO_IDX[name] for name in COLORS] == list(range(len(COLORS)))
    assert [STATE_TO_IDX[name] for name in DOOR_STATES] == list(range(len(DOOR_STATES)))


# -- registration and the missing extra ---------------------------------------------------------


def test_ids_are_registered_without_importing_minigrid():
    out = run_python(
        "import sys, gymnasium, ragen_bench\n"
        "env = gymnasium.make('RAGEN/BabyAI-GoToLocal-v0')\n"
        "print('minigrid' in sys.modules)"
    )
    assert out.strip() == "False"
    assert [i for i in ENV_IDS if i.startswith("RAGEN/BabyAI-")] == IDS
    assert all(entry(i).extra == "babyai" and entry(i).kwargs == {"level": i[13:-3]} for i in IDS)
    assert not set(IDS) & set(BUILTIN_IDS)


def test_missing_library_names_the_extra(monkeypatch):
    for module in ("minigrid", "minigrid.envs.babyai", "minigrid.utils.baby_ai_bot"):
        monkeypatch.setitem(sys.modules, module, None)  # import now raises ModuleNotFoundError
    env = gymnasium.make("RAGEN/BabyAI-GoToLocal-v0")
    with pytest.raises(MissingExtra, match=r"ragen-bench\[babyai\]"):
        env.reset(seed=0)
    real = importlib.util.find_spec
    monkeypatch.setattr(catalog.importlib.util, "find_spec", lambda n: None if n == "minigrid" else real(n))
    assert catalog.missing_extra("RAGEN/BabyAI-GoToLocal-v0") == backend.INSTALL_HINT


def test_bad_level_is_refused_up_front():
    with pytest.raises(ValueError, match="BabyAIEnv: level"):
        gymnasium.make("RAGEN/BabyAI-GoToLocal-v0", level="BossLevel")


# -- playing --------------------------------------------------------------------------------------


def _play_optimal(env, seed: int) -> tuple[list[int], dict]:
    env.reset(seed=seed)
    actions = []
    while True:
        action = env.optimal_action()
        actions.append(action)
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            assert terminated and not truncated and reward > 0, (env.level, seed)
            return actions, info


def _test_seeds(env_id: str, count: int | None) -> tuple[int, ...]:
    return panels.load(env_id, "test").seeds[:count]


@pytest.mark.parametrize("env_id", IDS)
def test_optimal_wins_a_sample_of_the_test_panel_within_the_budget(minigrid, env_id):
    env = gymnasium.make(env_id).unwrapped
    budget = chat_budget(env_id).max_actions_per_episode
    for seed in _test_seeds(env_id, SAMPLE):
        actions, info = _play_optimal(env, seed)
        assert info["success"] and len(actions) <= budget and env.optimal_action() is None


@pytest.mark.parametrize("env_id", IDS)
def test_the_optimal_agent_planning_several_actions_a_turn_wins_through_the_chat_layer(minigrid, env_id):
    # It plans a turn's actions on a copy, so the live env's bot is asked for each action only as it is
    # played: the bot must follow a plan it was not asked for one action at a time.
    from ragen_bench.agents.scripted import play_optimal
    from ragen_bench.chat import ChatConfig

    played = play_optimal(env_id, ChatConfig(max_turns=40, max_actions_per_episode=40), _test_seeds(env_id, SAMPLE))
    assert all(episode.success for episode in played)
    assert max(len(turn.action_ids) for episode in played for turn in episode.turns) > 1


@pytest.mark.slow
@pytest.mark.parametrize("env_id", IDS)
def test_optimal_wins_every_test_panel_episode(minigrid, env_id):
    env = gymnasium.make(env_id).unwrapped
    lengths = [len(_play_optimal(env, seed)[0]) for seed in _test_seeds(env_id, None)]
    assert max(lengths) == chat_budget(env_id).max_actions_per_episode


def test_observation_is_minigrid_s_state_in_words(minigrid):
    from minigrid.envs.babyai import PutNextLocal

    ours = gymnasium.make("RAGEN/BabyAI-PutNextLocal-v0").unwrapped
    theirs = PutNextLocal()
    text, info = ours.reset(seed=5)
    observation, _ = theirs.reset(seed=5)
    assert info["mission"] == observation["mission"] and text.startswith(f"Mission: {observation['mission']}\n")
    assert info["optimal_length"] is None and info["level_seed"] == 5 and not info["success"]
    for action in (0, 2, 2, 1, 2):
        text, reward, terminated, truncated, _ = ours.step(action)
        observation, *rest = theirs.step(action)
        assert (reward, terminated, truncated) == tuple(rest[:3])
        assert text == describe_view(observation["image"], observation["direction"], observation["mission"], None)


def test_rgb_array_is_minigrid_s_picture(minigrid):
    from minigrid.envs.babyai import GoToLocal

    ours = gymnasium.make("RAGEN/BabyAI-GoToLocal-v0", render_mode="rgb_array")
    theirs = GoToLocal(render_mode="rgb_array")
    text, _ = ours.reset(seed=9)
    theirs.reset(seed=9)
    picture = ours.render()
    assert picture.dtype == np.uint8 and picture.shape == (256, 256, 3)
    assert np.array_equal(picture, theirs.render())
    assert ours.unwrapped.render_text() == text  # the picture leaves the text as it was


def test_the_bot_built_at_the_first_consult_plans_as_one_built_at_reset(minigrid):
    # The bot is built when first asked (before the first step), not at every reset: it must plan as a bot
    # built at the reset would; asked only after a step, there is none (as when a reset's bot was dropped).
    from minigrid.utils.baby_ai_bot import BabyAIBot

    env = gymnasium.make("RAGEN/BabyAI-PutNextLocal-v0").unwrapped
    for seed in range(4):
        env.reset(seed=seed)
        at_reset, last = BabyAIBot(env._level), None
        env.render()
        while not env.episode_finished:
            action = env.optimal_action()
            assert action == int(at_reset.replan(last)), seed
            env.step(action)
            last = action
        env.reset(seed=seed)
        env.step(0)
        assert env.optimal_action() is None


def test_actions_are_balrog_s_names_and_an_action_off_the_bot_s_plan_ends_it(minigrid):
    env = gymnasium.make("RAGEN/BabyAI-GoToLocal-v0").unwrapped
    assert env.action_names == ACTION_NAMES and env.action_space.n == 7
    env.reset(seed=123)
    planned = env.optimal_action()
    assert env.optimal_action() == planned  # asking twice plans once
    env.step((planned + 1) % 3)
    assert env.optimal_action() is None


def test_reset_prints_nothing(minigrid, capsys):
    env = gymnasium.make("RAGEN/BabyAI-PutNextLocal-v0")
    for seed in range(20):  # minigrid prints each layout its generator rejects; these seeds reject some
        env.reset(seed=seed)
    assert capsys.readouterr().out == ""


def test_a_copy_mid_episode_goes_on_exactly_as_the_original(minigrid):
    env = gymnasium.make("RAGEN/BabyAI-UnlockLocal-v0").unwrapped
    env.reset(seed=200)
    for _ in range(4):
        env.step(env.optimal_action())
    twin = copy.deepcopy(env)
    while not env.episode_finished:
        action = env.optimal_action()
        assert twin.optimal_action() == action
        assert env.step(action) == twin.step(action)


@pytest.mark.parametrize("env_id", IDS)
def test_panels_regenerate(minigrid, env_id):
    for split in ("train", "val", "test"):
        panels.load(env_id, split).verify()
    held_out = {seed for split in ("val", "test") for seed in panels.load(env_id, split).seeds}
    assert not held_out & set(panels.load(env_id, "train").seeds)


def episodes_digest() -> str:
    """Every id's optimal episode on two test seeds plus a fixed walk, as one digest."""
    digest = hashlib.sha256()
    for env_id in IDS:
        env = gymnasium.make(env_id).unwrapped
        for seed in _test_seeds(env_id, 2):
            actions, info = _play_optimal(env, seed)
            digest.update(repr((actions, info, env.render_text())).encode())
        env.reset(seed=7)
        for action in (2, 0, 2, 3, 1, 5, 2, 4, 6):
            if not env.episode_finished:
                digest.update(repr(env.step(action)).encode())
    return digest.hexdigest()


def test_same_episodes_in_a_fresh_process(minigrid):
    fresh = run_python("from tests.test_babyai import episodes_digest; print(episodes_digest())", hash_seed="4242")
    assert fresh.strip() == episodes_digest()
