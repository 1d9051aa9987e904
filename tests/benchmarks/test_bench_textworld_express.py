"""Speed of the TextWorld-Express ids beside the library itself and beside TextWorld's own Python env.

    RAGEN_BENCH_BENCHMARKS=1 .venv/bin/python -m pytest tests/benchmarks/test_bench_textworld_express.py \
        --benchmark-enable --benchmark-only --benchmark-columns=median,iqr,ops,rounds

Three envs, one run: ``RAGEN/TWX-coin-v0`` (ours: TWX behind the TextEnv contract, with the
valid-action list in the observation), ``textworld_express.TextWorldExpressEnv`` (the library
as its README uses it, same game and seed), and TextWorld's Coin Collector (``textworld``
1.7, the game TWX's coin reimplements; compiled once per session with Inform 7, ~20 s),
played through ``textworld.gym``.  TextWorld needs ``pip install 'ragen-bench[twx-peer]'``
(``make bench`` installs it); without it its benchmarks skip and say so.

Each timed step is the first step of a fresh episode (the reset is not timed), and every
result is checked: our first step and the library's give the same text, TextWorld's
first policy command moves the player.
"""

from __future__ import annotations

import importlib.util
import itertools

import gymnasium
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench import panels
from ragen_bench.envs.textworld_express.env import VALID_ACTIONS_HEADER
from tests.benchmarks.checks import recorded

ENV_ID = "RAGEN/TWX-coin-v0"
SEED = 20_000  # the first seed of the test panel
FIRST_ACTION = "look around"  # the gold path's first action on SEED
ROUNDS = 1000

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("textworld_express") is None, reason="needs the twx extra: pip install 'ragen-bench[twx]'"
)


@pytest.fixture(scope="module")
def ours():
    env = gymnasium.make(ENV_ID).unwrapped
    yield env
    env.close()


@pytest.fixture(scope="module")
def library():
    from textworld_express import TextWorldExpressEnv

    server = TextWorldExpressEnv(envStepLimit=100)
    server.load("coin", "")
    yield server
    server.close()


@pytest.fixture(scope="module")
def textworld_coin(tmp_path_factory):
    """TextWorld's Coin Collector (level 5: the coin 5 rooms away), compiled once, as a ``textworld.gym`` env."""
    if importlib.util.find_spec("textworld") is None:
        pytest.skip("TextWorld is not installed: pip install 'ragen-bench[twx-peer]'")
    import textworld
    import textworld.gym
    from textworld.challenges import coin_collector

    options = textworld.GameOptions()
    options.seeds = 1234
    options.path = str(tmp_path_factory.mktemp("textworld") / "coin.z8")
    path = textworld.generator.compile_game(coin_collector.make({"level": 5}, options), options)
    infos = textworld.EnvInfos(admissible_commands=True, policy_commands=True)
    env = textworld.gym.make(textworld.gym.register_game(path, infos, max_episode_steps=100))
    yield env
    env.close()


def _time_first_steps(benchmark, reset, step) -> list:
    results: list = []

    def fresh_episode() -> None:  # pedantic() would pass a returned value on as arguments
        reset()

    benchmark.pedantic(recorded(step, results), setup=fresh_episode, rounds=ROUNDS, iterations=1, warmup_rounds=10)
    assert results
    return results


def test_reset_ours(benchmark, ours):
    seeds = itertools.count(SEED)
    results = []
    benchmark.pedantic(recorded(lambda: ours.reset(seed=next(seeds)), results), rounds=200, iterations=1)
    panel = panels.load(ENV_ID, "test")
    for offset, (observation, info) in enumerate(results):
        assert panels.observation_sha256(observation) == panel.obs_sha256[offset] and info["gold_length"] > 0


def test_reset_library(benchmark, library):
    # With the gold path, as ours (it is most of the reset's cost).
    seeds = itertools.count(SEED)
    results = []
    benchmark.pedantic(
        recorded(lambda: library.reset(seed=next(seeds), gameFold="test", generateGoldPath=True), results),
        rounds=200, iterations=1,
    )
    assert all(info["taskDescription"] and info["validActions"] for _, info in results)


def test_step_ours(benchmark, ours):
    results = _time_first_steps(benchmark, lambda: ours.reset(seed=SEED), lambda: ours.step(FIRST_ACTION))
    observation = results[0][0]
    assert observation.startswith("You are in the kitchen.") and VALID_ACTIONS_HEADER in observation
    assert all(result[0] == observation and result[1:4] == (0.0, False, False) for result in results)


def test_step_library(benchmark, library, ours):
    results = _time_first_steps(
        benchmark,
        lambda: library.reset(seed=SEED, gameFold="test", generateGoldPath=False),
        lambda: library.step(FIRST_ACTION),
    )
    ours.reset(seed=SEED)
    expected = ours.step(FIRST_ACTION)[0].split(f"\n\n{VALID_ACTIONS_HEADER}")[0]
    assert all(observation.strip() == expected and not done for observation, _, done, _ in results)


def test_step_textworld(benchmark, textworld_coin):
    _, info = textworld_coin.reset()
    first = info["policy_commands"][0]
    results = _time_first_steps(benchmark, textworld_coin.reset, lambda: textworld_coin.step(first))
    observation = results[0][0]
    assert "-=" in observation  # a room header: the move went through
    assert all(result[0] == observation and not result[2] for result in results)
