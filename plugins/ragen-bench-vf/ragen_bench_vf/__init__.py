"""The taskset id ``ragen-bench-vf`` for verifiers' loader: exports the taskset, env and harness.

verifiers resolves ``--env.taskset.id ragen-bench-vf`` to this package and takes from ``__all__``
its one ``Taskset``, its one ``Env`` (the run's env, with its config) and its one ``Harness`` (the
seat's default program).  Everything is defined in :mod:`ragen_bench.integrations.verifiers`.
"""

from ragen_bench.integrations.verifiers import (
    ChatLayerHarness,
    ChatLayerHarnessConfig,
    RagenEnv,
    RagenEnvConfig,
    RagenTask,
    RagenTaskData,
    RagenTaskset,
    RagenTasksetConfig,
    env_config,
    load_environment,
)

__all__ = [
    "ChatLayerHarness",
    "ChatLayerHarnessConfig",
    "RagenEnv",
    "RagenEnvConfig",
    "RagenTask",
    "RagenTaskData",
    "RagenTaskset",
    "RagenTasksetConfig",
    "env_config",
    "load_environment",
]
