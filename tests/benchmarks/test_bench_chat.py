"""Chat-wrapper throughput: episodes/s through ``run_lockstep`` with the optimal agent.

The full path the eval harness runs per episode: env reset, prompt building, the
agent's reply, parsing, env steps, the trajectory record and its JSON line.

    .venv/bin/python -m pytest tests/benchmarks/test_bench_chat.py --benchmark-enable

``episodes_per_s`` lands in each benchmark's ``extra_info``.  The Corridor case uses a
trivial env, so it measures the chat layer's own ceiling; the Sokoban case is the
eval target (>= 2,000 episodes/s per core), where level generation and the solver
dominate.  Profile the same loop with ``.venv/bin/python -m tests.benchmarks.test_bench_chat``.
"""

from __future__ import annotations

import io
import json

import gymnasium
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench.agents import make_agent
from ragen_bench.chat import ChatConfig, ChatEpisode, run_lockstep
from tests.test_chat_episode import Corridor

SOKOBAN = "RAGEN/Sokoban-6x6-v0"
TEST_PANEL_SEEDS = tuple(range(123, 379))
BATCH = 64


def play_panel(env_id: str, make_env, seeds=TEST_PANEL_SEEDS, config=ChatConfig()) -> str:
    """Play ``seeds`` in lock-step batches of ``BATCH`` envs; return the JSONL record text."""
    agent = make_agent("optimal", think=config.think, max_actions_per_turn=config.max_actions_per_turn)
    envs = [make_env() for _ in range(BATCH)]
    sink = io.StringIO()

    def write(trajectory):
        sink.write(json.dumps(trajectory.to_dict(), ensure_ascii=False))
        sink.write("\n")

    for start in range(0, len(seeds), BATCH):
        batch = seeds[start : start + BATCH]
        episodes = [ChatEpisode(env, config, env_id=env_id, seed=s, split="test") for env, s in zip(envs, batch)]
        run_lockstep(episodes, agent, on_finished=write)
    return sink.getvalue()


CASES = {
    "sokoban-6x6": (SOKOBAN, lambda: gymnasium.make(SOKOBAN)),
    "corridor (chat layer only)": ("test/Corridor", lambda: Corridor(length=6)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_optimal_agent_episodes_per_second(benchmark, case):
    env_id, make_env = CASES[case]
    benchmark.group = "chat wrapper: optimal agent, full path"
    records = benchmark.pedantic(play_panel, args=(env_id, make_env), rounds=5, iterations=1, warmup_rounds=1)
    lines = records.splitlines()
    assert len(lines) == len(TEST_PANEL_SEEDS)
    assert all(json.loads(line)["success"] for line in lines)
    if benchmark.stats is not None:  # None under --benchmark-disable
        benchmark.extra_info["episodes_per_s"] = round(len(lines) / benchmark.stats.stats.mean, 1)


if __name__ == "__main__":  # profile: python -m tests.benchmarks.test_bench_chat
    import cProfile
    import pstats

    play_panel(*CASES["sokoban-6x6"])  # warm caches
    cProfile.run("play_panel(*CASES['sokoban-6x6'])", "/tmp/bench_chat.prof")
    pstats.Stats("/tmp/bench_chat.prof").sort_stats("cumulative").print_stats(30)
