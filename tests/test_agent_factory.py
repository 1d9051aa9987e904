"""``make_agent``: registered and ``module:factory`` agents, and one clear error per mistake.

Every construction failure a user can cause is an :class:`AgentError` whose message names the
agent and, where one is to blame, the setting -- never a KeyError, TypeError or a traceback
from inside a model loader.
"""

from __future__ import annotations

import textwrap

import pytest

from ragen_bench.agents import make_agent
from ragen_bench.agents.scripted import OptimalAgent
from ragen_bench.chat import AgentError

CUSTOM = "ragen_bench_test_custom_agents"
CUSTOM_SOURCE = '''
from ragen_bench.agents.scripted import RandomAgent


class Echo:
    name = "echo"

    def __init__(self, greeting: str, *, times: int = 1) -> None:
        self.greeting, self.times = greeting, times

    def act(self, requests):
        return []

    def close(self):
        pass


def make_echo(greeting: str = "hi", *, times: int = 1) -> Echo:
    return Echo(greeting, times=times)


def make_anything(**settings) -> Echo:
    return Echo(str(sorted(settings)))


def make_not_an_agent() -> object:
    return object()


def make_needing_a_package():
    import a_package_that_is_not_installed_q  # noqa: F401


def make_rejecting(times: int = 1):
    raise ValueError(f"times must be odd, got {times}")


not_callable = 3
'''


@pytest.fixture(autouse=True)
def custom_module(tmp_path, monkeypatch):
    (tmp_path / f"{CUSTOM}.py").write_text(textwrap.dedent(CUSTOM_SOURCE))
    (tmp_path / "broken_agent_module_q.py").write_text("import another_package_that_is_not_installed_q\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def test_registered_and_custom_agents_are_built_from_settings():
    optimal = make_agent("optimal", think=False, max_actions_per_turn=3)
    assert isinstance(optimal, OptimalAgent) and (optimal.think, optimal.max_actions_per_turn) == (False, 3)
    echo = make_agent(f"{CUSTOM}:make_echo", greeting="hello", times=2)
    assert (echo.name, echo.greeting, echo.times) == ("echo", "hello", 2)
    assert make_agent(f"{CUSTOM}:make_anything", whatever=1, goes=None).greeting == "['goes', 'whatever']"
    assert make_agent(f"{CUSTOM}:Echo", greeting="a class works too").greeting == "a class works too"


# (agent, settings, what the one error message must say)
MISTAKES = [
    ("nope", {}, "unknown agent 'nope'; known agents: baseline, hf, human, openai, optimal, random, vllm"),
    ("Optimal", {}, "unknown agent 'Optimal'"),
    ("", {}, "unknown agent ''"),
    ("no_such_module_q:make", {}, "agent 'no_such_module_q:make': no module named 'no_such_module_q'"),
    ("no_such_package_q.sub:make", {}, "no module named 'no_such_package_q.sub'"),
    ("broken_agent_module_q:make", {}, "module 'broken_agent_module_q' needs the package 'another_package_that_is_not"),
    (f"{CUSTOM}:missing", {}, f"module '{CUSTOM}' has no factory 'missing'"),
    (f"{CUSTOM}:not_callable", {}, "has no factory 'not_callable'"),
    (f"{CUSTOM}:", {}, "expected 'module:factory'"),
    (":make_echo", {}, "expected 'module:factory'"),
    (f"{CUSTOM}:make_not_an_agent", {}, "returned a object, not an agent"),
    (f"{CUSTOM}:make_needing_a_package", {}, "needs the package 'a_package_that_is_not_installed_q', which is not"),
    (f"{CUSTOM}:make_rejecting", {"times": 2}, "agent '.*:make_rejecting': times must be odd, got 2"),
    (f"{CUSTOM}:make_echo", {"greting": "x"}, "unknown setting 'greting' \\(did you mean 'greeting'\\?\\)"),
    (f"{CUSTOM}:make_echo", {"times": "2"}, "setting 'times' must be int, got '2' \\(str\\)"),
    (f"{CUSTOM}:Echo", {}, "setting 'greeting' is required"),
    ("hf", {"temperature": "hot"}, "agent 'hf': setting 'temperature' must be float, got 'hot' \\(str\\)"),
    ("hf", {"max_new_tokens": 2.5}, "setting 'max_new_tokens' must be int, got 2.5 \\(float\\)"),
    ("hf", {"max_new_tokens": True}, "setting 'max_new_tokens' must be int, got True \\(bool\\)"),
    ("hf", {"tempreature": 0.5}, "unknown setting 'tempreature' \\(did you mean 'temperature'\\?\\)"),
    ("hf", {"batch_size": 8}, "unknown setting 'batch_size'.*generate_batch"),
    ("hf", {"seed": 1}, "unknown setting 'seed'.*sampling_seed"),
    ("hf", {"model": 3}, "setting 'model' must be str, got 3"),
    ("hf", {"num_threads": 1.0}, "setting 'num_threads' must be int or str or null, got 1.0"),
    ("hf", {"temperature": float("nan")}, "setting 'temperature' must be a finite number, got nan"),
    ("openai", {}, "agent 'openai': setting 'model' is required"),
    ("openai", {"model": "m", "concurrency": 4}, "unknown setting 'concurrency'.*max_concurrency"),
    ("openai", {"model": "m", "max_concurrency": 0}, "agent 'openai': max_concurrency must be >= 1, got 0"),
    ("openai", {"model": "m", "timeout_s": 0}, "timeout_s must be > 0, got 0"),
    ("openai", {"model": "m", "max_retries": -1}, "max_retries must be >= 0, got -1"),
    ("openai", {"model": "m", "temperature": -0.5}, "temperature must be >= 0 and <= 10 \\(0: greedy decoding\\), got -0.5"),
    ("openai", {"model": "m", "temperature": 10.5}, "temperature must be >= 0 and <= 10 .*, got 10.5"),
    ("openai", {"model": "m", "top_p": 0}, "top_p must be in \\(0, 1\\], got 0"),
    ("openai", {"model": "m", "base_url": 8000}, "setting 'base_url' must be str or null, got 8000"),
    ("vllm", {"engine_options": "gpu=0.5"}, "setting 'engine_options' must be dict or null"),
    ("vllm", {"gpu_memory_utilization": 0.5}, "unknown setting 'gpu_memory_utilization'"),
    ("random", {"sampling_seed": True}, "agent 'random': setting 'sampling_seed' must be int, got True \\(bool\\)"),
    ("random", {"actions_per_turn": 0}, "actions_per_turn must be >= 1, got 0"),
    ("optimal", {"think": "false"}, "setting 'think' must be bool, got 'false'"),
    ("optimal", {"max_actions_per_turn": None}, "setting 'max_actions_per_turn' must be int, got None"),
]


@pytest.mark.parametrize(("agent", "settings", "message"), MISTAKES, ids=[f"{a}-{sorted(s)}" for a, s, _ in MISTAKES])
def test_every_construction_mistake_is_one_agent_error_naming_agent_and_key(agent, settings, message):
    with pytest.raises(AgentError, match=message) as caught:
        make_agent(agent, **settings)
    assert type(caught.value) is AgentError
    assert repr(agent) in str(caught.value)
