"""``render_mode="rgb_array"``: every env and board game that lists it draws its state as a picture.

The picture is a view: it never changes an observation, a reward or a panel, and
``"ansi"``/``None`` behave as before.  It is deterministic (same state, same bytes, in
any process) and different states draw differently.
"""

from __future__ import annotations

import hashlib
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ragen_bench import registry
from ragen_bench.envs import drawing
from ragen_bench.envs.base import ResetNeededError
from tests.conftest import run_python
from tests.env_contract import env_class, require_extra

# The ids that draw pictures are the ones whose env says so, listing "rgb_array" among its render modes
# (what chat.images reads): the grid families drawn here and BabyAI, Crafter and NetHack, whose library
# draws (their own files check its picture too).  NetHack's are played in .venv-nethack.
PICTURE_IDS = [row.id for row in registry.ENTRIES if "rgb_array" in env_class(row.id).metadata["render_modes"]]
TEXT_IDS = [row.id for row in registry.ENTRIES if row.id not in PICTURE_IDS]
# NetHack draws only the part of the map seen so far (tests/test_nethack.py): its picture grows with the map,
# and its text's message and status lines are not in it.  Every other picture is the whole state: one size
# for the episode, and a different picture for every different text.
WHOLE_STATE_IDS = [env_id for env_id in PICTURE_IDS if registry.entry(env_id).family != "nethack"]
BOARD_GAMES = ["RAGEN/TicTacToe-v0", "RAGEN/ConnectFour-v0"]


def picture_env(env_id: str, **kwargs):
    require_extra(env_id)
    return gymnasium.make(env_id, **{"render_mode": "rgb_array", **kwargs}).unwrapped


def plain_actions(env, count: int) -> list:
    """``count`` actions the env accepts: its optimal ones where known, else cycling through the actions."""
    actions = []
    for index in range(count):
        action = env.optimal_action()
        if action is None:
            action = index % env.action_space.n if env.action_names is not None else env.action_space.sample()
        actions.append(action)
        if env.step(action)[2:4] != (False, False):
            break
    return actions


def assert_picture(image) -> None:
    assert isinstance(image, np.ndarray) and image.dtype == np.uint8
    assert image.ndim == 3 and image.shape[2] == 3 and image.shape[0] >= 16 and image.shape[1] >= 16
    assert image.flags.c_contiguous


def same(a, b) -> bool:
    """Equal values, numpy arrays (2048's info holds its grid) compared by type, shape and contents."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return type(a) is type(b) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[key], b[key]) for key in a)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return type(a) is type(b) and a == b


def digest(image: np.ndarray) -> str:
    return hashlib.sha256(image.tobytes() + str(image.shape).encode()).hexdigest()


@pytest.mark.parametrize("env_id", PICTURE_IDS)
def test_picture_envs_list_rgb_array_and_draw_a_uint8_picture(env_id):
    env = picture_env(env_id)
    assert env.metadata["render_modes"] == ["ansi", "rgb_array"] and env.metadata["render_fps"] > 0
    with pytest.raises(ResetNeededError, match="reset"):
        env.render()
    env.reset(seed=3)
    first = env.render()
    assert_picture(first)
    assert not np.shares_memory(first, env.render()), "each call returns a fresh array"
    for action in plain_actions(_fresh(env_id, 3), 5):
        env.step(action)
        picture = env.render()
        assert_picture(picture)
        assert picture.shape == first.shape or env_id not in WHOLE_STATE_IDS


@pytest.mark.parametrize("env_id", TEXT_IDS)
def test_text_envs_keep_ansi_only(env_id):
    assert gymnasium.make(env_id).unwrapped.metadata["render_modes"] == ["ansi"]


def _fresh(env_id: str, seed: int):
    """A text env at the start of ``seed``'s episode (to draw actions from without touching the one tested)."""
    env = gymnasium.make(env_id).unwrapped
    env.reset(seed=seed)
    return env


@pytest.mark.parametrize("env_id", PICTURE_IDS)
def test_the_picture_changes_no_observation_reward_or_info(env_id):
    text, picture = gymnasium.make(env_id, render_mode="ansi").unwrapped, picture_env(env_id)
    for seed in (0, 7):
        assert same(text.reset(seed=seed), picture.reset(seed=seed))
        picture.render()
        for action in plain_actions(_fresh(env_id, seed), 8):
            assert same(picture.step(action), text.step(action))
            picture.render()
        assert text.render() == picture.render_text()


@pytest.mark.parametrize("env_id", WHOLE_STATE_IDS)
def test_pictures_are_deterministic_and_states_draw_differently(env_id):
    env, again = picture_env(env_id), picture_env(env_id)
    seen = {}
    for seed in range(6):
        env.reset(seed=seed)
        again.reset(seed=seed)
        assert np.array_equal(env.render(), again.render())
        seen.setdefault(env.render_text(), digest(env.render()))
    # Different boards, different pictures (and equal boards, equal pictures).
    assert len(set(seen.values())) == len(seen) > 1
    env.reset(seed=1)
    before = env.render()
    for action in plain_actions(_fresh(env_id, 1), 20):
        text = env.render_text()
        env.step(action)
        if env.render_text() != text:
            assert not np.array_equal(env.render(), before)
            break
    else:
        pytest.fail("no action changed the state")


@pytest.mark.parametrize("env_id", PICTURE_IDS)
def test_pictures_are_the_same_bytes_in_a_fresh_process(env_id):
    env = picture_env(env_id)
    env.reset(seed=11)
    out = run_python(
        "import gymnasium, hashlib, ragen_bench\n"
        f"env = gymnasium.make({env_id!r}, render_mode='rgb_array').unwrapped\n"
        "env.reset(seed=11)\n"
        "image = env.render()\n"
        "print(hashlib.sha256(image.tobytes() + str(image.shape).encode()).hexdigest())\n"
    )
    assert out.strip() == digest(env.render())


@pytest.mark.parametrize("env_id", PICTURE_IDS)
def test_check_env_is_clean_with_rgb_array(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(picture_env(env_id), skip_render_check=False)
        env = gymnasium.make(env_id, render_mode="rgb_array")  # with the passive checker
        env.reset(seed=0)
        assert_picture(env.render())


# -- board games ---------------------------------------------------------------------


@pytest.fixture(params=BOARD_GAMES)
def game(request):
    pytest.importorskip("pettingzoo")
    from ragen_bench.games import make_multiagent

    return lambda **kwargs: make_multiagent(request.param, **kwargs)


def test_board_games_draw_every_position_of_a_game(game):
    env, text = game(render_mode="rgb_array"), game(render_mode="ansi")
    assert env.unwrapped.metadata["render_modes"] == ["ansi", "rgb_array"]
    env.reset(seed=0)
    text.reset(seed=0)
    pictures = [env.render()]
    boards = [text.render()]
    while not any(env.terminations.values()):
        move = env.unwrapped.legal_moves(env.agent_selection)[len(pictures) % 2]
        env.step(move)
        text.step(move)
        pictures.append(env.render())
        boards.append(text.render())
        assert_picture(pictures[-1])
        assert pictures[-1].shape == pictures[0].shape
        assert np.array_equal(env.observe(env.agent_selection)["observation"],
                              text.observe(text.agent_selection)["observation"])
    # Every move changed the board and the picture.
    assert len({digest(p) for p in pictures}) == len(set(boards)) == len(pictures)
    quiet = game(render_mode=None)
    quiet.reset(seed=0)
    assert quiet.render() is None


def test_the_board_games_above_are_every_game_that_draws():
    """A game that lists rgb_array among its render modes is played above (a game's picture is declared
    by the instance, OpenSpiel's naming itself per game, so the list is checked here, not computed at import)."""
    pytest.importorskip("pettingzoo")
    from ragen_bench.games import make_multiagent
    from ragen_bench.games.registry import GAME_ENTRIES

    drawn = set()
    for row in GAME_ENTRIES:
        if row.missing_extra() is None:
            env = make_multiagent(row.id)
            if "rgb_array" in env.unwrapped.metadata["render_modes"]:
                drawn.add(row.id)
            env.close()
    assert drawn == set(BOARD_GAMES)


def test_board_games_refuse_unknown_render_modes(game):
    with pytest.raises(ValueError, match=r"render_mode must be None or one of \['ansi', 'rgb_array'\]"):
        game(render_mode="human")


# -- the drawing kit ------------------------------------------------------------------


def test_tile_picture_places_each_cell_tile():
    tiles = drawing.stack_tiles([drawing.canvas(2, 3, (c, c, c)) for c in (0, 100, 200)])
    image = drawing.tile_picture(np.array([[0, 1], [2, 0]]), tiles)
    assert image.shape == (4, 6, 3)
    assert image[0, 0, 0] == 0 and image[0, 3, 0] == 100 and image[2, 0, 0] == 200 and image[3, 5, 0] == 0
    with pytest.raises(ValueError):
        tiles[0, 0, 0] = 1  # tile stacks are shared by every frame: read-only


def test_seven_segment_digits_are_all_different_and_clipped_at_the_edges():
    masks = {digit: drawing.number_mask(digit, 12).tobytes() for digit in "0123456789"}
    assert len(set(masks.values())) == 10
    assert drawing.number_mask("2048", 10).shape[0] == 10
    image = drawing.canvas(8, 8, (0, 0, 0))
    drawing.draw_number(image, "65536", 0, 0, 12, (255, 255, 255))  # mostly outside: no error
    assert image.any()
    with pytest.raises(ValueError, match="only digits"):
        drawing.number_mask("2a", 10)


def test_shapes_stay_inside_their_bounds():
    image = drawing.canvas(20, 20, (0, 0, 0))
    drawing.fill_disk(image, 10, 10, 4, (255, 0, 0))
    ys, xs = np.nonzero(image[..., 0])
    assert ys.min() >= 6 and ys.max() <= 13 and xs.min() >= 6 and xs.max() <= 13
    drawing.fill_line(image, (0, 0), (20, 20), 1, (0, 255, 0))
    assert image[0, 0, 1] == image[19, 19, 1] == 255 and image[0, 19, 1] == 0
    drawing.fill_rect(image, -5, -5, 7, 7, (0, 0, 255))
    assert image[1, 1, 2] == 255 and image[2, 2, 2] == 0


# -- different states, different pictures (hypothesis) ---------------------------------


def _pairs(state):
    """Two states drawn by ``state``: independent ones, or one state twice (so both outcomes are tried)."""
    return st.tuples(state, state) | state.flatmap(lambda s: st.tuples(st.just(s), st.just(s)))


_TILE_VALUES = st.sampled_from([0] + [2**k for k in range(1, 18)])
_BOARDS_2048 = st.lists(st.lists(_TILE_VALUES, min_size=4, max_size=4), min_size=4, max_size=4).map(
    lambda rows: tuple(map(tuple, rows)))
_SUDOKU = st.tuples(
    arrays(np.int8, (9, 9), elements=st.integers(0, 9)), arrays(np.int8, (9, 9), elements=st.integers(0, 1))
).map(lambda pair: (pair[0], pair[0] * pair[1]))  # a given cell holds a digit
_CUBES = arrays(np.int64, (6, 2, 2), elements=st.integers(0, 5))


def _equal_states(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b)) if isinstance(a, tuple) else np.array_equal(a, b)


@settings(max_examples=60, deadline=None)
@given(_pairs(_BOARDS_2048))
def test_2048_pictures_tell_every_pair_of_grids_apart(pair):
    from ragen_bench.envs.game_2048 import picture

    first, second = pair
    assert (first == second) == np.array_equal(picture.draw(first), picture.draw(second))


@settings(max_examples=60, deadline=None)
@given(_pairs(_SUDOKU))
def test_sudoku_pictures_tell_every_pair_of_boards_apart(pair):
    from ragen_bench.envs.sudoku import picture

    first, second = pair
    assert _equal_states(first, second) == np.array_equal(picture.draw(*first), picture.draw(*second))


@settings(max_examples=60, deadline=None)
@given(_pairs(_CUBES))
def test_cube_nets_tell_every_pair_of_colourings_apart(pair):
    from ragen_bench.envs.rubikscube import picture

    first, second = pair
    assert np.array_equal(first, second) == np.array_equal(picture.draw(first), picture.draw(second))


@settings(max_examples=60, deadline=None)
@given(st.text("0123456789", min_size=1, max_size=6), st.text("0123456789", min_size=1, max_size=6))
def test_different_numbers_draw_differently(first, second):
    masks = drawing.number_mask(first, 16), drawing.number_mask(second, 16)
    assert (first == second) == (masks[0].shape == masks[1].shape and np.array_equal(*masks))
