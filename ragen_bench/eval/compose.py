"""Composing the eval config: ``configs/eval.yaml`` plus command-line overrides, as a plain dict.

``configs/eval.yaml`` is read as a package resource, so an installed wheel works like a
checkout.  What the dict may hold is checked, and what it implies derived, by :func:`ragen_bench.eval.config.load`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ragen_bench import values
from ragen_bench.eval.budget import BUDGET_KEY
from ragen_bench.eval.config import ConfigError, eval_targets, resolve_budget

# Sections whose settings are open-ended: an agent's factory takes keys its yaml does not list
# (``+agent.num_threads=2``), so Hydra's advice to add one with ``+`` is right there.
OPEN_SECTIONS = ("agent", "opponent")


def compose_config(name: str, overrides: Sequence[str]) -> dict[str, Any]:
    """Compose ``configs/<name>.yaml`` with command-line overrides into a plain dict.

    The compose API (not ``@hydra.main``) leaves the working directory alone and
    creates no output folders; missing mandatory values (``???``) raise here.
    """
    from hydra import compose, initialize_config_module
    from hydra.errors import ConfigCompositionException
    from omegaconf import OmegaConf

    from ragen_bench.chat import context
    from ragen_bench.data import CONFIG_MODULE
    from ragen_bench.eval.streams import register_resolver

    register_resolver()
    for override in overrides:
        # Hydra's own settings (hydra.run.dir=..., hydra/job_logging=...) configure a
        # Hydra app, which this is not: accepted, they would silently do nothing.
        if re.match(r"[+~]*hydra[./=]", override):
            raise ConfigError(f"{override}: hydra settings are not used here (the working directory never changes)")
    # RAGEN-2's context_window_mode / max_context_window: the chat.history_window they mean.
    overrides = context.translate(overrides, ConfigError)
    with initialize_config_module(config_module=CONFIG_MODULE, version_base=None):
        try:
            config = compose(config_name=name, overrides=list(overrides))
        except ConfigCompositionException as error:
            unknown = re.match(r"Could not override '([^']+)'", str(error))
            if unknown is None or unknown[1].split(".")[0] in OPEN_SECTIONS:
                raise
            raise ConfigError(_unknown_key(name, overrides, unknown[1])) from None
    composed = OmegaConf.to_container(config, resolve=True, throw_on_missing=True)
    return _with_budget(composed, overrides)  # type: ignore[arg-type]


def _with_budget(config: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """``budget=env`` resolved here, where the ``chat.*`` keys the user set are known: each wins over any budget.

    A config whose targets are unusable is returned as composed: :func:`~ragen_bench.eval.config.load`
    refuses it, for its first mistake.
    """
    if config.get(BUDGET_KEY) != "env":
        return config
    given = {key.split(".", 1)[1] for key in map(_override_key, overrides) if key.startswith("chat.")}
    try:
        targets = eval_targets(config)
    except ConfigError:
        return config
    return {**config, BUDGET_KEY: resolve_budget("env", targets, config["chat"], given)}


def _unknown_key(name: str, overrides: Sequence[str], key: str) -> str:
    """``limt=2``: the closest keys, not Hydra's advice to add it with ``+`` (which the check then refuses).

    The known keys are those at the key's level of the config composed without it.
    """
    from hydra import compose
    from omegaconf import OmegaConf

    others = [override for override in overrides if _override_key(override) != key]
    section, _, _ = key.rpartition(".")
    config = OmegaConf.to_container(compose(config_name=name, overrides=others))
    for part in filter(None, section.split(".")):
        config = config.get(part) if isinstance(config, dict) else None
    prefix = f"{section}." if section else ""
    known = [prefix + known_key for known_key in config] if isinstance(config, dict) else []
    return values.unknown_name("key", key, known, f"`ragen-bench {name} --help`")


def _override_key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")
