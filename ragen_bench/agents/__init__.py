"""Agents: the protocol (:mod:`ragen_bench.agents.base`) and a lazy factory table.

``make_agent(name, **settings)`` imports the module behind ``name`` only when asked,
so model agents' heavy dependencies (torch, transformers, vllm, httpx) stay out of
``import ragen_bench``.
"""

from __future__ import annotations

import importlib
from typing import Any

from ragen_bench.agents.base import Agent, AgentReply, AgentRequest

# name -> "module:factory"; each factory takes keyword settings and returns an Agent.
AGENT_FACTORIES: dict[str, str] = {
    "random": "ragen_bench.agents.scripted:make_random_agent",
    "optimal": "ragen_bench.agents.scripted:make_optimal_agent",
    "hf": "ragen_bench.agents.hf:make_hf_agent",
    "openai": "ragen_bench.agents.openai_compat:make_openai_agent",
    "vllm": "ragen_bench.agents.vllm_offline:make_vllm_agent",
}


def make_agent(name: str, **settings: Any) -> Agent:
    """Build the agent registered as ``name`` with its keyword ``settings``."""
    try:
        target = AGENT_FACTORIES[name]
    except KeyError:
        known = ", ".join(sorted(AGENT_FACTORIES))
        raise KeyError(f"unknown agent {name!r}; known agents: {known}") from None
    module_name, factory_name = target.split(":")
    factory = getattr(importlib.import_module(module_name), factory_name)
    return factory(**settings)


__all__ = ["AGENT_FACTORIES", "Agent", "AgentReply", "AgentRequest", "make_agent"]
