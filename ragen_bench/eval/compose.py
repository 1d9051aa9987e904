"""Composing the eval config: ``configs/eval.yaml`` plus command-line overrides, as a plain dict.

``configs/eval.yaml`` is read as a package resource, so an installed wheel works like a
checkout.  What the dict may hold is checked, and what it implies derived, by :func:`ragen_bench.eval.config.load`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ragen_bench.eval.config import ConfigError


def compose_config(name: str, overrides: Sequence[str]) -> dict[str, Any]:
    """Compose ``configs/<name>.yaml`` with command-line overrides into a plain dict.

    The compose API (not ``@hydra.main``) leaves the working directory alone and
    creates no output folders; missing mandatory values (``???``) raise here.
    """
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from ragen_bench.chat import context
    from ragen_bench.data import CONFIG_MODULE

    for override in overrides:
        # Hydra's own settings (hydra.run.dir=..., hydra/job_logging=...) configure a
        # Hydra app, which this is not: accepted, they would silently do nothing.
        if re.match(r"[+~]*hydra[./=]", override):
            raise ConfigError(f"{override}: hydra settings are not used here (the working directory never changes)")
    # RAGEN-2's context_window_mode / max_context_window: the chat.history_window they mean.
    overrides = context.translate(overrides, ConfigError)
    with initialize_config_module(config_module=CONFIG_MODULE, version_base=None):
        config = compose(config_name=name, overrides=list(overrides))
    return OmegaConf.to_container(config, resolve=True, throw_on_missing=True)  # type: ignore[return-value]
