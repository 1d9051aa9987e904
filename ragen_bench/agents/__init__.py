"""Agents and a lazy factory table.

The protocol agents follow (:class:`~ragen_bench.chat.AgentRequest`,
:class:`~ragen_bench.chat.AgentReply`, :class:`~ragen_bench.chat.Agent`) belongs to the chat
layer, :mod:`ragen_bench.chat.protocol`; this package implements it.

``make_agent(name, **settings)`` imports the module behind ``name`` only when asked, so model
agents' heavy dependencies (torch, transformers, vllm, httpx) stay out of ``import
ragen_bench``.  ``name`` is a key of :data:`AGENT_FACTORIES` or ``"module:factory"`` for an
agent defined outside the package.  Settings are checked against the factory's signature
and type annotations before anything is built, so a misspelt or ill-typed setting is one
:class:`~ragen_bench.chat.AgentError` naming the agent and the key, not a traceback from
deep inside a model loader.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any

from ragen_bench import values
from ragen_bench.chat.protocol import Agent, AgentError

# name -> "module:factory"; each factory takes keyword settings and returns an Agent.
AGENT_FACTORIES: dict[str, str] = {
    "random": "ragen_bench.agents.scripted:RandomAgent",
    "optimal": "ragen_bench.agents.scripted:OptimalAgent",
    "baseline": "ragen_bench.agents.scripted:BaselineAgent",
    "human": "ragen_bench.agents.human:HumanAgent",
    "hf": "ragen_bench.agents.hf:make_hf_agent",
    "openai": "ragen_bench.agents.openai_compat:make_openai_agent",
    "vllm": "ragen_bench.agents.vllm_offline:make_vllm_agent",
}

_KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def make_agent(name: str, /, **settings: Any) -> Agent:
    """Build the agent registered as ``name`` (or made by ``"module:factory"``) from ``settings``.

    Raises :class:`~ragen_bench.chat.AgentError` for every failure the user must fix:
    unknown agent, missing module or factory, unknown, missing or ill-typed setting, a
    value out of range, a model or package that is not installed.
    """
    target = AGENT_FACTORIES.get(name, name if ":" in name else None)
    if target is None:
        known = ", ".join(sorted(AGENT_FACTORIES))
        raise AgentError(f"unknown agent {name!r}; known agents: {known} (or 'module:factory' for your own)")
    factory = _load_factory(name, target)
    check_settings(name, factory, settings)
    try:
        agent = factory(**settings)
    except AgentError:
        raise
    except ModuleNotFoundError as missing:
        raise AgentError(f"agent {name!r} needs the package {missing.name!r}, which is not installed") from missing
    except (ValueError, FileNotFoundError) as invalid:  # our range checks and missing model paths
        raise AgentError(f"agent {name!r}: {invalid}") from invalid
    if not isinstance(agent, Agent):
        raise AgentError(
            f"agent {name!r}: the factory returned a {type(agent).__name__}, not an agent (name, act, close)"
        )
    return agent


def _load_factory(name: str, target: str) -> Callable[..., Any]:
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise AgentError(f"agent {name!r}: expected 'module:factory', got {target!r}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as missing:
        if missing.name is not None and (module_name + ".").startswith(missing.name + "."):
            raise AgentError(f"agent {name!r}: no module named {module_name!r}") from missing
        raise AgentError(
            f"agent {name!r}: module {module_name!r} needs the package {missing.name!r}, which is not installed"
        ) from missing
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise AgentError(f"agent {name!r}: module {module_name!r} has no factory {attribute!r}")
    return factory


def check_settings(name: str, factory: Callable[..., Any], settings: Mapping[str, Any]) -> None:
    """Raise :class:`AgentError` unless ``factory(**settings)`` fits its signature and annotations.

    Keys must be keyword parameters (any key, when the factory takes ``**kwargs``); every
    parameter without a default must be given; values must fit their annotations by the
    rules eval and train configs follow (:func:`ragen_bench.values.conform`: ``bool`` is
    not an ``int``, a float is finite).  Annotations that cannot be resolved are not checked.
    """
    parameters = inspect.signature(factory).parameters
    keywords = {key: p for key, p in parameters.items() if p.kind in _KEYWORD_KINDS}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    for key in settings:
        if key not in keywords and not takes_any:
            close = difflib.get_close_matches(key, keywords, n=1, cutoff=0.75)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise AgentError(
                f"agent {name!r}: unknown setting {key!r}{hint}; known settings: {', '.join(sorted(keywords))}"
            )
    for key, parameter in keywords.items():
        if parameter.default is inspect.Parameter.empty and key not in settings:
            raise AgentError(f"agent {name!r}: setting {key!r} is required")
    hints = _type_hints(factory)
    for key, value in settings.items():
        if key in hints:
            try:
                values.conform(value, hints[key])
            except values.Mismatch as mismatch:
                raise AgentError(
                    f"agent {name!r}: setting {key!r}{mismatch.where} must be {mismatch.expected}, "
                    f"got {mismatch.value!r} ({type(mismatch.value).__name__})"
                ) from None


def _type_hints(factory: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(factory.__init__ if isinstance(factory, type) else factory)
    except (NameError, TypeError):  # annotations naming what the module does not define
        return {}


__all__ = ["AGENT_FACTORIES", "check_settings", "make_agent"]
