"""Sudoku: RAGEN-2 fidelity (recorded episodes and its live env), the rules, the action text,
the Gymnasium contract, determinism, the solver and the optimal policy."""

from __future__ import annotations

import hashlib
import json
import random

import gymnasium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragen_bench
from ragen_bench.chat import AgentReply, ChatConfig, ChatEpisode
from ragen_bench.envs.base import EpisodeFinishedError, InvalidActionError
from ragen_bench.envs.sudoku import SudokuEnv, actions, puzzles, solver
from ragen_bench.envs.sudoku.env import MAX_ACTION_CHARS, MAX_OBSERVATION_CHARS
from ragen_bench.registry import entry
from tests import env_contract
from tests.benchmarks.ragen2_sudoku import sudoku_env
from tests.conftest import ragen2_records

IDS = [i for i in ragen_bench.ENV_IDS if i.startswith("RAGEN/Sudoku-")]
REWARDS = {-0.1, 0.5, 1.0, 10.5, 11.0}
# Recorded episodes still running at the step cap after a refused action (RAGEN-2 goes on, we truncate).
PAST_THE_CAP = {"RAGEN/Sudoku-9x9-Easy-v0": 0, "RAGEN/Sudoku-9x9-Medium-v0": 3, "RAGEN/Sudoku-4x4-v0": 0}


def make(env_id: str = "RAGEN/Sudoku-9x9-Easy-v0", **kwargs) -> SudokuEnv:
    return gymnasium.make(env_id, **kwargs).unwrapped


def ragen2_info(info: dict) -> dict:
    """Our step info without the key RAGEN-2 lacks."""
    return {key: value for key, value in info.items() if key != "level_seed"}


def conflicts(cells: list[int], n: int) -> bool:
    """Whether any row, column or box repeats a digit."""
    geometry = puzzles.layout(n)
    seen = set()
    for cell, digit in enumerate(cells):
        if digit:
            for unit in (("r", geometry.rows[cell]), ("c", geometry.cols[cell]), ("b", geometry.boxes[cell])):
                if (unit, digit) in seen:
                    return True
                seen.add((unit, digit))
    return False


def test_ids_and_ragen2_names():
    assert IDS == ["RAGEN/Sudoku-9x9-Easy-v0", "RAGEN/Sudoku-9x9-Medium-v0", "RAGEN/Sudoku-4x4-v0"]
    assert [entry(i).ragen_name for i in IDS] == ["SimpleSudoku", "MediumSudoku", None]
    assert {entry(i).family for i in IDS} == {"sudoku"}


@pytest.mark.parametrize("env_id", IDS)
def test_global_random_generators_untouched(env_id):
    # RAGEN-2 seeds the global random and numpy.random on every reset; we draw from our own.
    env_contract.assert_global_rngs_untouched(env_id, ["1,1,1", "place 2 at row 1 col 2"])


# -- fidelity to RAGEN-2 ------------------------------------------------------------


def test_fixture_covers_every_id_seed_and_kind_of_step():
    records = ragen2_records("sudoku")
    seeds = sorted(set(range(100)) | set(range(123, 379)))
    for env_id in IDS:
        assert [r["seed"] for r in records if r["env_id"] == env_id] == seeds
    steps = [s for r in records for s in r["steps"]]
    errors = {s["info"].get("error", "").split(" ")[0] for s in steps}
    assert {"Could", "Row", "Column", "Number", "Cannot"} <= errors
    assert {-0.1, 0.5, 1.0, 11.0} <= {s["reward"] for s in steps} <= REWARDS  # 10.5: see the other-solution test
    assert sum(s["info"].get("success", False) for s in steps) > 250  # solved episodes
    assert any(s["info"].get("valid_numbers") == [] for s in steps)  # a placed digit written again


@pytest.mark.parametrize("env_id", IDS)
def test_recorded_ragen2_episodes_replay_exactly(env_id):
    """Reset observation, puzzle, and every step's observation, reward, done and info of RAGEN-2."""
    env = make(env_id)
    past_the_cap = 0
    for record in (r for r in ragen2_records("sudoku") if r["env_id"] == env_id):
        seed = record["seed"]
        observation, info = env.reset(seed=seed)
        assert observation == record["obs"], seed
        assert list(env.givens.flat) == record["givens"] and list(env.solution.flat) == record["solution"], seed
        assert info == {"success": False, "level_seed": seed, "optimal_length": record["givens"].count(0)}
        for index, step in enumerate(record["steps"]):
            observation, reward, terminated, truncated, info = env.step(step["action"])
            where = (seed, index, step["action"])
            if "obs" in step:
                assert observation == step["obs"], where
            else:
                assert hashlib.sha256(observation.encode()).hexdigest()[:16] == step["obs_sha256_16"], where
            assert (reward, ragen2_info(info), info["level_seed"]) == (step["reward"], step["info"], seed), where
            done = terminated or truncated
            if done == step["done"]:
                assert terminated == (done and step["info"]["success"]), where
            else:
                # The one difference: at the step cap RAGEN-2 ends only on an accepted placement.
                assert truncated and index + 1 == env.max_steps and not step["info"]["action_is_valid"], where
                past_the_cap += 1
            if done:
                break
    # Its rollouts (20 or 30 actions) never get there; the recording does a few times.
    assert past_the_cap == PAST_THE_CAP[env_id]


@pytest.mark.parametrize("env_id", IDS)
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), picks=st.lists(st.integers(0, 10**6), min_size=1, max_size=25))
def test_live_ragen2_env_agrees_on_any_seed_and_action_text(env_id, seed, picks):
    """Random seeds (RAGEN-2 accepts up to 2**32 - 1) and actions mixing valid moves with hostile text."""
    peer = sudoku_env(env_id)
    ours = make(env_id)
    assert ours.reset(seed=seed)[0] == peer.reset(seed=seed)
    n = ours.grid_size
    junk = ["", "İ" * 3 + "1,2,3", "١,٢,٣", "(1,1,1) what", "PLACE 1 AT (1, 1)", "1,\n1,\n1", "x" * 200, "9" * 40 + ",1,1"]
    for pick in picks:
        row, col, digit = pick % n + 1, pick // n % n + 1, pick // n // n % n + 1
        if pick % 4 == 0:
            action = junk[pick // 4 % len(junk)]
        else:
            action = random.Random(pick).choice(actions_forms(digit, row, col))
        step = ours.step(action)
        observation, reward, done, info = peer.step(action)
        assert (step[0], step[1], ragen2_info(step[4])) == (observation, reward, info), action
        if step[3] and not done:  # the step cap: RAGEN-2 ends there only on an accepted placement
            assert ours.render().endswith(f"Steps: {ours.max_steps}/{ours.max_steps}") and not info["action_is_valid"]
            break
        assert (step[2] or step[3]) == done, action
        if done:
            break


def actions_forms(digit: int, row: int, col: int) -> list[str]:
    return [
        f"place {digit} at row {row} col {col}",
        f"place {digit} at ({row},{col})",
        f"{digit} at {row}, {col}",
        f"({row},{col},{digit})",
        f"{row},{col},{digit}",
        f"what about {digit},{row},{col}",
    ]


# -- the generator ------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**64), lengths=st.lists(st.integers(1, 200), min_size=1, max_size=40))
def test_permutations_are_cpython_shuffles(seed, lengths):
    """Pinned shuffle == CPython's, across many block refills of words."""
    draws, reference = puzzles._Draws(seed, block=16), random.Random(seed)  # small blocks: many refills
    for length in lengths:
        expected = list(range(length))
        reference.shuffle(expected)
        assert draws.permutation(tuple(range(length))) == expected


@pytest.mark.parametrize("n, difficulty, blanks", [(9, "easy", 32), (9, "medium", 40), (9, "hard", 48), (4, "easy", 6), (4, "hard", 9)])
def test_puzzles_are_cut_from_valid_boards(n, difficulty, blanks):
    for seed in range(20):
        puzzle = puzzles.generate(n, difficulty, seed)
        assert puzzle.givens.count(0) == blanks and 0 not in puzzle.solution
        assert not conflicts(list(puzzle.solution), n)
        assert all(g in (0, s) for g, s in zip(puzzle.givens, puzzle.solution))


def test_puzzles_may_have_several_solutions():
    # RAGEN-2 does not check uniqueness; any rule-abiding fill solves the episode.
    counts = [len(solver.completions(puzzles.generate(9, "medium", seed).givens, 9, limit=2)) for seed in range(123, 143)]
    assert set(counts) <= {1, 2} and 2 in counts


# -- the action text ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("place 5 at row 2 col 3", (1, 2, 5)),
        ("  PLACE 5 AT ROW 2 COL 3 ", (1, 2, 5)),
        ("place 5 at (2, 3)", (1, 2, 5)),
        ("place 5 at 2,3", (1, 2, 5)),
        ("5 at 2,\t3", (1, 2, 5)),
        ("(2,3,5)", (1, 2, 5)),
        ("2,3,5", (1, 2, 5)),
        ("(2,3,5) what", (2, 4, 2)),  # "at" inside "what": the number comes first
        ("٢,٣,٥", (1, 2, 5)),  # Unicode decimal digits
        ("１,２,３", (0, 1, 3)),
        ("1 at 2,3 then place 4 at 5,6", (4, 5, 4)),  # form 3 is tried before form 4
        ("place 1 at row 1 col 1 || 2,2,2", (0, 0, 1)),
        ("1.5,2,3", (4, 1, 3)),  # searched anywhere: "5,2,3"
        ("\u202e<answer>1,2,3</answer>", (0, 1, 3)),  # tags and a bidi override are just text around it
    ],
)
def test_action_forms(text, expected):
    row, col, digit = expected
    assert actions.parse(text, 9) == actions.Placement(row, col, digit)


@pytest.mark.parametrize(
    "text, error",
    [
        ("0,1,1", "Row 0 is out of range (1-9)"),
        ("1,10,1", "Column 10 is out of range (1-9)"),
        ("1,1,10", "Number 10 is out of range (1-9)"),
        ("place 3 at row 12 col 1", "Row 12 is out of range (1-9)"),
        ("10,10,1 and 1,1,1", "Row 10 is out of range (1-9)"),  # the first match decides
        ("Hello", "Could not parse action: 'hello'. Expected format: 'place 5 at row 2 col 3' or '2,3,5'"),
        ("1, 2", "Could not parse action: '1, 2'. Expected format: 'place 5 at row 2 col 3' or '2,3,5'"),
    ],
)
def test_action_errors(text, error):
    assert actions.parse(text, 9) == error


def test_bad_actions_raise_a_clear_error():
    env = make()
    env.reset(seed=0)
    for bad in (None, 5, b"1,1,1", ["1,1,1"], "1" * (MAX_ACTION_CHARS + 1)):
        with pytest.raises(InvalidActionError, match="SudokuEnv: invalid action .* expected a str of at most 256"):
            env.step(bad)
    assert env.render().endswith("Steps: 0/81")  # nothing was counted


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=MAX_ACTION_CHARS))
def test_any_text_is_a_penalised_or_accepted_step(text):
    env = make("RAGEN/Sudoku-4x4-v0")
    env.reset(seed=1)
    observation, reward, terminated, truncated, info = env.step(text)
    assert env.observation_space.contains(observation)
    assert reward in REWARDS and info["action_is_valid"] == (reward > 0)
    if not info["action_is_valid"]:
        assert info["error"] and env.board.tolist() == env.givens.tolist()


@pytest.mark.parametrize("text", ["\ud800", "a\x00b", "\u202e", "<answer></answer>", "\U0001F600" * 100])
def test_hostile_text_naming_nothing_is_refused_and_quoted(text):
    """Lone surrogates, NUL, a bidi override, tags, emoji: a refused step whose feedback quotes the text."""
    env = make()
    env.reset(seed=0)
    observation, reward, *_, info = env.step(text)
    assert (reward, info["action_is_valid"]) == (-0.1, False)
    assert info["error"] in observation and env.board.tolist() == env.givens.tolist()


def test_the_longest_observation_fits_the_space():
    env = make()
    env.reset(seed=0)
    observation = env.step("İ" * MAX_ACTION_CHARS)[0]  # lower-casing doubles each character
    assert 2 * MAX_ACTION_CHARS < len(observation) < 1700 < MAX_OBSERVATION_CHARS
    assert env.observation_space.contains(observation)


# -- rules, rewards, episode end --------------------------------------------------------


def blank_cells(env: SudokuEnv) -> list[tuple[int, int]]:
    return [(r, c) for r in range(env.grid_size) for c in range(env.grid_size) if env.board[r, c] == 0]


def test_rewards_and_feedback_of_each_kind_of_move():
    env = make()
    env.reset(seed=0)
    (r, c), *_ = blank_cells(env)
    right = int(env.solution[r, c])
    step = env.step(f"{r + 1},{c + 1},{right}")
    assert (step[1], step[4]["correct_placement"], step[4]["cells_filled"]) == (1.0, True, 50)
    assert env.last_feedback == f"✓ Correct! Placed {right} at ({r + 1},{c + 1})"
    # The same digit again clashes with itself; a placed cell has no candidates.
    step = env.step(f"place {right} at row {r + 1} col {c + 1}")
    assert (step[1], step[4]["valid_numbers"]) == (-0.1, [])
    assert step[4]["error"] == f"Number {right} conflicts with row {r + 1}, column {c + 1}, box (1,1)"
    step = env.step("1,1,3")
    assert (step[1], step[4]["error"]) == (-0.1, "Cannot modify initial cells")
    assert env.render().endswith("Steps: 3/81")


def first_move_where(env: SudokuEnv, keep) -> tuple[tuple[int, int], int]:
    """The first (cell, digit) a rule allows, over test seeds of ``env`` in order, for which ``keep(board)``
    holds on the board it makes; ``env`` is left reset on that seed."""
    for seed in range(123, 379):
        env.reset(seed=seed)
        for cell in blank_cells(env):
            for digit in env._candidates(cell[0] * env.grid_size + cell[1]):
                if digit != env.solution[cell] and keep(_with(env, cell, digit)):
                    return cell, digit
    raise AssertionError("no such move on the test panel")


def test_valid_but_wrong_digit_then_solving_pays_the_bonus():
    env = make("RAGEN/Sudoku-4x4-v0")
    (r, c), digit = first_move_where(env, lambda board: solver.completions(board, 4))
    assert env.step(f"place {digit} at row {r + 1} col {c + 1}")[1] == 0.5
    assert "Valid but not optimal" in env.last_feedback
    total = []
    while not env.episode_finished:
        total.append(env.step(env.optimal_action())[1])
    assert total[-1] in (10.5, 11.0) and env.render().count("🎉 Congratulations! Puzzle solved!") == 1


def _with(env: SudokuEnv, cell: tuple[int, int], digit: int) -> list[int]:
    cells = env.board.flatten().tolist()
    cells[cell[0] * env.grid_size + cell[1]] = digit
    return cells


def test_step_cap_truncates_even_on_a_refused_action():
    env = make("RAGEN/Sudoku-4x4-v0")
    env.reset(seed=0)
    for step in range(1, 17):
        _, reward, terminated, truncated, info = env.step("nonsense")
        assert (reward, terminated, truncated) == (-0.1, False, step == 16)
    with pytest.raises(EpisodeFinishedError):
        env.step("1,1,1")


def test_hints_appear_once_ten_cells_are_left():
    env = make()
    env.reset(seed=5)
    while len(blank_cells(env)) > 11:
        env.step(env.optimal_action())
    assert "VALID NUMBERS" not in env.render()
    env.step(env.optimal_action())
    hints = env.render().split("💡 VALID NUMBERS FOR EMPTY CELLS:\n")[1].split("\n\n")[0].splitlines()
    assert len(hints) == 10 and all(line.startswith("  - (") for line in hints)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), moves=st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8), st.integers(1, 9)), max_size=60))
def test_invariants_under_any_placements(seed, moves):
    """Givens never change, the board never breaks a rule, rewards and success follow the board."""
    env = make()
    env.reset(seed=seed)
    givens = env.givens.tolist()
    for row, col, digit in moves:
        observation, reward, terminated, truncated, info = env.step(f"{row + 1},{col + 1},{digit}")
        board = env.board
        assert all(g == 0 or b == g for g_row, b_row in zip(givens, board.tolist()) for g, b in zip(g_row, b_row))
        assert not conflicts(board.flatten().tolist(), 9)
        assert reward in REWARDS and info["success"] == terminated == (0 not in board)
        assert observation == env.render() and env.observation_space.contains(observation)
        if terminated or truncated:
            break


# -- the solver and the optimal policy --------------------------------------------------


@pytest.mark.parametrize("env_id", IDS)
def test_optimal_policy_fills_every_test_puzzle_in_optimal_length_moves(env_id):
    env = make(env_id)
    for seed in range(123, 379, 8):
        _, info = env.reset(seed=seed)
        rewards = []
        while not env.episode_finished:
            rewards.append(env.step(env.optimal_action())[1])
        assert len(rewards) == info["optimal_length"] and sum(rewards) == info["optimal_length"] + 10.0, seed
        assert env.optimal_action() is None


def test_another_solution_solves_and_the_optimal_policy_completes_it():
    env = make("RAGEN/Sudoku-9x9-Medium-v0")
    for seed in range(123, 379):
        env.reset(seed=seed)
        found = solver.completions(env.givens.flatten().tolist(), 9, limit=2)
        if len(found) == 2:
            break
    other = next(board for board in found if board != tuple(env.solution.flat))
    differing = [i for i, (a, b) in enumerate(zip(other, env.solution.flat)) if a != b]
    # One digit of the other solution, then the optimal policy: it completes that solution.
    env.step(f"{differing[0] // 9 + 1},{differing[0] % 9 + 1},{other[differing[0]]}")
    moves = 1
    while not env.episode_finished:
        env.step(env.optimal_action())
        moves += 1
    assert env.board.flatten().tolist() == list(other) and moves == env.givens.flatten().tolist().count(0)
    # Filled with a digit off the generator's solution last, the solving move pays 0.5 + 10.
    env.reset(seed=seed)
    blanks = [i for i, g in enumerate(env.givens.flat) if g == 0]
    order = [i for i in blanks if i not in differing] + differing
    rewards = [env.step(f"{i // 9 + 1},{i % 9 + 1},{other[i]}")[1] for i in order]
    assert rewards == [1.0] * (len(blanks) - len(differing)) + [0.5] * (len(differing) - 1) + [10.5]
    assert env.episode_finished and "🎉 Congratulations! Puzzle solved!" in env.render()


def test_repair_move_when_no_completion_is_left():
    env = make("RAGEN/Sudoku-4x4-v0")
    (r, c), digit = first_move_where(env, lambda board: not solver.completions(board, 4))
    env.step(f"{r + 1},{c + 1},{digit}")
    action = env.optimal_action()
    placement = actions.parse(action, 4)
    assert placement.digit == env.solution[placement.row, placement.col]
    assert env.step(action)[4]["action_is_valid"]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.sampled_from([4, 9]))
def test_solver_completions_keep_the_givens_and_break_no_rule(seed, n):
    puzzle = puzzles.generate(n, "hard", seed)
    found = solver.completions(puzzle.givens, n, limit=3)
    assert found and len(set(found)) == len(found)
    if len(found) < 3:  # the search is exhaustive: then these are all the solutions
        assert puzzle.solution in found
    assert solver.completions((0,) + puzzle.solution[1:], n, limit=2) == [puzzle.solution]
    for board in found:
        assert 0 not in board and not conflicts(list(board), n)
        assert all(g in (0, b) for g, b in zip(puzzle.givens, board))
    broken = list(puzzle.solution)
    broken[1] = broken[0]  # two equal digits in the first row
    assert solver.completions(broken, n) == []


# -- arguments, seeds, the chat layer ----------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(grid_size=16), "grid_size must be one of"),
        (dict(grid_size=9.0), "grid_size must be one of"),
        (dict(difficulty="expert"), "difficulty must be one of"),
        (dict(max_steps=0), "max_steps must be an int in 1..10000"),
        (dict(max_steps=True), "max_steps must be an int in 1..10000"),
    ],
)
def test_bad_arguments_raise_at_construction(kwargs, message):
    with pytest.raises((TypeError, ValueError), match=f"SudokuEnv: {message}"):
        SudokuEnv(**kwargs)


def test_seeds_beyond_what_ragen2_accepts_are_refused():
    env = make()
    env.reset(seed=2**32 - 1)
    with pytest.raises(ValueError, match=r"seed must be in 0..4294967295"):
        env.reset(seed=2**32)


def test_chat_layer_sends_the_answer_as_one_action():
    env = gymnasium.make("RAGEN/Sudoku-4x4-v0")
    config = ChatConfig(max_turns=3, max_actions_per_episode=3)
    episode = ChatEpisode(env, config, env_id="RAGEN/Sudoku-4x4-v0", seed=0)
    episode.reset()
    episode.step(AgentReply("<think>r2c1</think><answer>place 4 at row 2 col 1</answer>"))
    episode.step(AgentReply("<think>x</think><answer>" + "9" * 300 + "</answer>"))  # too long: not an action
    episode.step(AgentReply("<think>x</think><answer>what?</answer>"))  # an action RAGEN-2 refuses
    turns = episode.trajectory().turns
    assert [t.env_rewards for t in turns] == [[1.0], [], [-0.1]]
    assert [t.format_penalty for t in turns] == [0.0, config.format_penalty, 0.0]


@pytest.mark.parametrize("env_id", IDS)
def test_eval_plays_the_optimal_and_random_agents(env_id, tmp_path):
    """`ragen-bench eval` end to end: the optimal agent solves in optimal_length moves, random never places."""
    from ragen_bench.cli import main

    budget = ["chat.max_turns=40", "chat.max_actions_per_episode=40", "limit=2", "progress=false"]
    results = {}
    for agent in ("optimal", "random"):
        out = tmp_path / agent
        assert main(["eval", f"env={env_id}", f"agent={agent}", f"out={out}", *budget]) == 0
        (group,) = json.loads((out / "summary.json").read_text())["groups"]
        results[agent] = group
    blanks = puzzles.blank_count(make(env_id).grid_size, make(env_id).difficulty)
    optimal, floor = results["optimal"], results["random"]
    assert (optimal["success_rate"], optimal["mean_actions"], optimal["mean_return"]) == (1.0, blanks, blanks + 10.0)
    assert floor["success_rate"] == 0.0 and floor["mean_return"] < 0
