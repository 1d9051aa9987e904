"""Which panels an eval config evaluates: one env's split, or a suite resolved into its eval pairs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragen_bench.eval.schema import ConfigError, require_type


def eval_targets(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The ``(env_id, split)`` pairs to evaluate: one env, or a suite's eval pairs.

    With a suite, a given ``split`` keeps only that split's pairs.  Unknown ids,
    suites and splits raise :class:`~ragen_bench.eval.schema.ConfigError`.
    """
    from ragen_bench import panels, suites
    from ragen_bench.games.registry import GAME_IDS
    from ragen_bench.registry import ENV_IDS

    env_id, suite_name, split = config.get("env"), config.get("suite"), config.get("split")
    if (env_id is None) == (suite_name is None):
        raise ConfigError("give exactly one of env=<id> or suite=<name>")
    if env_id is not None:
        require_type("env", env_id, str, "an env id")
        if env_id not in ENV_IDS and env_id not in GAME_IDS:
            raise ConfigError(f"env: unknown env id {env_id!r}; `ragen-bench envs list` shows the ids")
        require_type("split", split, str, "a split name")
        if split not in panels.available(env_id):
            raise ConfigError(f"split: {env_id} has no {split!r} panel; splits: {panels.available(env_id)}")
        return [(env_id, split)]
    require_type("suite", suite_name, str, "a suite name")
    require_type("split", split, str, "a split name", optional=True)
    try:
        suite = suites.get(suite_name)
    except suites.SuiteError as error:
        raise ConfigError(f"suite: {error}") from None
    # A panel evaluated by several tracks is run once.
    pairs = list(dict.fromkeys((p.env_id, p.split) for track in suite.tracks for p in track.evaluate))
    if split is not None:
        pairs = [pair for pair in pairs if pair[1] == split]
        if not pairs:
            raise ConfigError(f"split: suite {suite_name!r} has no eval pairs with split {split!r}")
    return pairs
