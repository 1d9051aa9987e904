"""The TextEnv contract, checked the same way on every registered id.

Each family states only its own rules; ``TextEnv`` owns seeds, options, actions,
episode boundaries and render modes.  These tests hold every id to that one contract
(see ``ragen_bench/envs/base.py``), so a family cannot drift from it unnoticed.
"""

from __future__ import annotations

import ast
import importlib
import random
import re
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.error import InvalidAction, ResetNeeded

import ragen_bench
from ragen_bench.envs.base import EpisodeFinishedError, TextEnv
from tests import env_contract

# The ids of this project's own envs (reasoning-gym's are held to the contract in test_reasoning_gym.py).
IDS = ragen_bench.registry.BUILTIN_IDS


def make(env_id: str, **kwargs) -> TextEnv:
    """The raw env, rendering its observation text unless told otherwise (``Sokoban-6x6-Visual``
    draws pictures by default; those are checked in ``tests/test_pictures.py``)."""
    return gymnasium.make(env_id, **{"render_mode": "ansi", **kwargs}).unwrapped


def construct(env_id: str, **kwargs) -> TextEnv:
    """The id's class built directly (gymnasium.make warns about, or chokes on, odd render modes)."""
    spec = gymnasium.spec(env_id)
    return type(make(env_id))(**{**spec.kwargs, **kwargs})


def some_valid_action(env: TextEnv):
    """The optimal action where one is known, else the first action (or an answer text)."""
    action = env.optimal_action()
    if action is not None:
        return action
    return 0 if env.action_names is not None else "0"


def play_to_the_end(env: TextEnv) -> tuple:
    for _ in range(1000):
        step = env.step(some_valid_action(env))
        if step[2] or step[3]:
            return step
    pytest.fail("episode did not end in 1000 steps")


# Hostile actions: wrong types and out-of-range values.
DISCRETE_BAD_ACTIONS = [-1, 2**70, 1.5, 1.0, "1", b"\x01", True, False, None, [0], (0,), np.float32(0.9),
                        np.bool_(True), np.array([0]), "Up"]
TEXT_BAD_ACTIONS = [None, 3, 3.0, b"3 * 2", ["3"], ("3",), True, np.str_("1") * 5000, "9" * 5000]
BAD_SEEDS = [True, False, 1.5, "3", b"3", -1, -(2**70), 2**64, 2**200, [1], (1,), np.float64(3.0), np.bool_(True)]
BAD_OPTIONS = [{"level": 3}, {"seed": 1}, {"": None}, {1: 2}]


# -- episode boundaries -----------------------------------------------------------------


@pytest.mark.parametrize("env_id", IDS)
def test_step_and_render_before_reset_raise(env_id):
    env = make(env_id)
    with pytest.raises(ResetNeeded, match="reset"):
        env.step(some_valid_action(env) if env.action_names is None else 0)
    with pytest.raises(ResetNeeded, match="reset"):
        env.render()


@pytest.mark.parametrize("env_id", IDS)
def test_stepping_after_the_end_raises_and_changes_nothing(env_id):
    env = make(env_id)
    env.reset(seed=3)
    final_obs, *_ = play_to_the_end(env)
    assert env.episode_finished
    for _ in range(3):
        with pytest.raises(EpisodeFinishedError, match=rf"{type(env).__name__}: .*call reset\(\)"):
            env.step(0 if env.action_names is not None else "0")
    assert env.render() == final_obs
    obs, _ = env.reset(seed=3)
    assert not env.episode_finished and env.observation_space.contains(obs)
    env.step(some_valid_action(env))  # the new episode steps normally


@pytest.mark.parametrize("env_id", IDS)
def test_a_truncated_episode_is_finished_too(env_id):
    env = make(env_id)
    env.reset(seed=0)
    for _ in range(1000):
        # A never-optimal action (a wall bump or a wrong answer) runs into the step cap if there is one.
        step = env.step(0 if env.action_names is not None else "not an answer")
        if step[2] or step[3]:
            break
    with pytest.raises(EpisodeFinishedError):
        env.step(0 if env.action_names is not None else "0")


# -- actions ------------------------------------------------------------------------------


def _bad_actions(env: TextEnv) -> list:
    # A discrete env also refuses its first id past the end (4 for four actions, 12 for the cube's).
    return [env.action_space.n, *DISCRETE_BAD_ACTIONS] if env.action_names is not None else TEXT_BAD_ACTIONS


@pytest.mark.parametrize("env_id", IDS)
def test_actions_outside_the_space_raise_naming_env_action_and_range(env_id):
    env = make(env_id)
    obs, _ = env.reset(seed=5)
    for action in _bad_actions(env):
        with pytest.raises(InvalidAction) as caught:
            env.step(action)
        message = str(caught.value)
        assert type(env).__name__ in message and "invalid action" in message, message
        assert f"0..{env.action_space.n - 1}" in message if env.action_names else "characters" in message
        assert isinstance(caught.value, ValueError)  # also catchable as a plain bad value
        assert env.render() == obs  # a refused action is not a step
    env.step(some_valid_action(env))


@pytest.mark.parametrize("env_id", [i for i in IDS if "Bandit" in i or "Sokoban" in i or "FrozenLake" in i])
def test_numpy_integer_actions_equal_python_ints(env_id):
    plain, numpy_ = make(env_id), make(env_id)
    plain.reset(seed=9)
    numpy_.reset(seed=9)
    for dtype in (np.int64, np.uint8, np.int32):
        a, b = plain.step(1), numpy_.step(dtype(1))
        assert repr(a) == repr(b)
        if a[2] or a[3]:
            break


@pytest.mark.parametrize("env_id", [i for i in IDS if "Countdown" in i or "MathQA" in i])
def test_free_text_spaces_contain_any_text_within_the_bound(env_id):
    env = make(env_id)
    answers = ("", "Paris", "3 X 2", "6 − 3 − 2", "3\u00a0*\u20092", "½", "東京", "\\frac{1}{2}", "\x00", "a" * 256)
    for text in answers:
        assert env.action_space.contains(text), text
    assert not env.action_space.contains("a" * (env.action_space.max_length + 1))
    assert not env.action_space.contains(b"3")
    assert env.action_space.contains(env.action_space.sample())


# -- seeds, options, render modes -----------------------------------------------------------


@pytest.mark.parametrize("env_id", IDS)
def test_bad_seeds_raise_and_numpy_seeds_equal_python_ints(env_id):
    env = make(env_id)
    for seed in BAD_SEEDS:
        with pytest.raises((TypeError, ValueError), match=type(env).__name__):
            env.reset(seed=seed)
    with pytest.raises(ValueError, match="seed must be in"):
        env.reset(seed=env.seed_limit)
    obs, info = env.reset(seed=np.uint32(7))
    assert type(env.level_seed) is int and env.level_seed == 7
    assert obs == make(env_id).reset(seed=7)[0]


@pytest.mark.parametrize("env_id", IDS)
def test_unseeded_resets_draw_their_seeds_from_the_seeded_stream(env_id):
    first, second = make(env_id), make(env_id)
    first.reset(seed=21)
    second.reset(seed=21)
    runs = [[env.reset()[1]["level_seed"] for _ in range(3)] for env in (first, second)]
    assert runs[0] == runs[1] and len(set(runs[0])) == 3
    assert all(isinstance(seed, int) and 0 <= seed < 2**32 for seed in runs[0])


@pytest.mark.parametrize("env_id", IDS)
def test_unknown_options_raise_naming_them(env_id):
    env = make(env_id)
    for options in BAD_OPTIONS:
        with pytest.raises(ValueError, match="unknown options"):
            env.reset(seed=0, options=options)
    with pytest.raises(ValueError, match="'level'"):
        env.reset(seed=0, options={"level": 3})
    with pytest.raises(TypeError, match="options must be a mapping"):
        env.reset(seed=0, options=["level"])
    assert env.reset(seed=0, options={})[0] == env.reset(seed=0, options=None)[0]


@pytest.mark.parametrize("env_id", IDS)
def test_render_modes_outside_the_metadata_are_refused(env_id):
    modes = make(env_id).metadata["render_modes"]  # grid families add rgb_array (tests/test_pictures.py)
    for mode in [m for m in ("human", "rgb_array", "ANSI", "", 1) if m not in modes]:
        with pytest.raises(ValueError, match=rf"render_mode must be one of {re.escape(str(modes))} or None"):
            construct(env_id, render_mode=mode)


@pytest.mark.parametrize("env_id", IDS)
def test_render_mode_none_renders_nothing_and_ansi_renders_the_observation(env_id):
    quiet = make(env_id, render_mode=None)
    assert quiet.render() is None
    quiet.reset(seed=2)
    assert quiet.render() is None
    loud = make(env_id, render_mode="ansi")
    obs, _ = loud.reset(seed=2)
    assert loud.render() == obs


# -- RNG hygiene --------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", IDS)
def test_global_random_states_are_untouched(env_id):
    env = make(env_id)
    env.reset(seed=0)
    env_contract.assert_global_rngs_untouched(env_id, [some_valid_action(env)])


@pytest.mark.parametrize("env_id", IDS)
def test_refused_calls_leave_global_random_states_untouched(env_id):
    random.seed(5)
    np.random.seed(5)
    python_state, numpy_state = random.getstate(), np.random.get_state()
    env = make(env_id)
    env.reset(seed=1)
    for action in _bad_actions(env):
        with pytest.raises(InvalidAction):
            env.step(action)
    assert random.getstate() == python_state
    assert np.array_equal(np.random.get_state()[1], numpy_state[1])


# -- package layout -----------------------------------------------------------------------

# Each family's modules from top to bottom; a module may import only modules below it.
LAYERS = {
    "sokoban": ["env", "picture", "solver", "levels"],
    "frozen_lake": ["env", "picture", "solver", "levels"],
    "bandit": ["env"],
    "countdown": ["env", "solver", "arith"],
    "math_qa": ["env", "questions"],
    "rubikscube": ["env", "picture", "solver", "cube"],
}


def _imported_names(path: Path) -> set[str]:
    """Dotted names a module imports (``from a import b`` gives ``a.b``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.parametrize("family", sorted(LAYERS))
def test_family_imports_run_one_way(family):
    package = Path(ragen_bench.__file__).parent / "envs" / family
    layers = LAYERS[family]
    assert sorted(p.stem for p in package.glob("*.py")) == sorted(layers + ["__init__"])
    for rank, module in enumerate(layers):
        names = _imported_names(package / f"{module}.py")
        below = tuple(f"ragen_bench.envs.{family}.{lower}" for lower in layers[rank + 1 :])
        own = {n for n in names if n.startswith(f"ragen_bench.envs.{family}.")}
        assert all(n.startswith(below) for n in own) if below else not own, (module, own)
        shared = {family, "base", "config", "datafiles", "coords", "drawing"}  # the modules every family may use
        others = {n.split(".")[2] for n in names if n.startswith("ragen_bench.envs.")} - shared
        assert not others, (module, others)  # no family imports another
        assert not {n for n in names if n.startswith(("ragen_bench.chat", "ragen_bench.agents", "ragen_bench.eval"))}
    exported = importlib.import_module(f"ragen_bench.envs.{family}").__all__
    # The env class and its config dataclass (the arguments it declares).
    env = [name for name in exported if name.endswith("Env")]
    assert len(env) == 1 and sorted(exported) == sorted([env[0].removesuffix("Env") + "Config", env[0]])
