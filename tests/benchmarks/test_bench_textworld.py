"""Speed of the TextWorld ids beside TextWorld's own env, in the same run.

    RAGEN_BENCH_BENCHMARKS=1 .venv/bin/python -m pytest tests/benchmarks/test_bench_textworld.py \
        --benchmark-enable --benchmark-only --benchmark-columns=min,median,rounds

Per game type, two envs on the same frozen game (test seed 123): ``RAGEN/TextWorld-<type>-v0``
(ours: TextWorld behind the TextEnv contract, its answer trimmed by ``game_text``) and
TextWorld's own env (``textworld.start`` on the same unpacked file with the same requested
infos).  A reset restarts that game; each timed step is the walkthrough's first command, the
first step of a fresh episode (the reset is not timed).  Both envs' results are checked.
"""

from __future__ import annotations

import importlib.util
import itertools

import gymnasium
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench.envs.textworld import backend, game_text
from tests.benchmarks.checks import PANEL_SEED, check_panel_reset, recorded, time_first_steps

KINDS = ("CoinCollector", "Cooking")
ROUNDS = 40  # a reset is ~0.1 s, and each timed step follows one

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("textworld") is None, reason="needs the textworld extra: pip install 'ragen-bench[textworld]'"
)


def _ours(kind: str):
    return gymnasium.make(f"RAGEN/TextWorld-{kind}-v0").unwrapped


def _library(kind: str):
    env = backend.start(backend.game_file(kind, PANEL_SEED))
    env.seed(PANEL_SEED)
    return env


def _first_command(kind: str) -> str:
    env = _ours(kind)
    env.reset(seed=PANEL_SEED)
    return env.optimal_action()


@pytest.mark.parametrize("kind", KINDS)
def test_reset_ours(benchmark, kind):
    env, results = _ours(kind), []
    benchmark.pedantic(recorded(lambda: env.reset(seed=PANEL_SEED), results), rounds=ROUNDS, iterations=1, warmup_rounds=2)
    for observation, info in results:
        check_panel_reset(f"RAGEN/TextWorld-{kind}-v0", observation, info)


@pytest.mark.parametrize("kind", KINDS)
def test_reset_library(benchmark, kind):
    env, results = _library(kind), []
    benchmark.pedantic(recorded(env.reset, results), rounds=ROUNDS, iterations=1, warmup_rounds=2)
    ours, _ = _ours(kind).reset(seed=PANEL_SEED)
    assert all(game_text(state.feedback, state["objective"]) == ours for state in results)


@pytest.mark.parametrize("kind", KINDS)
def test_step_ours(benchmark, kind):
    results = time_first_steps(benchmark, _ours(kind), itertools.repeat(_first_command(kind)), rounds=ROUNDS)
    assert all(result == results[0] for result in results) and not results[0][2]


@pytest.mark.parametrize("kind", KINDS)
def test_step_library(benchmark, kind):
    env, command, results = _library(kind), _first_command(kind), []

    def fresh_episode() -> None:  # TextWorld's reset takes no seed: the env plays seed 123's game
        env.reset()

    benchmark.pedantic(recorded(lambda: env.step(command), results), setup=fresh_episode, rounds=ROUNDS,
                       iterations=1, warmup_rounds=2)
    ours = _ours(kind)
    ours.reset(seed=PANEL_SEED)
    text = ours.step(command)[0]
    assert all(game_text(state.feedback) == text and not done for state, _, done in results)
