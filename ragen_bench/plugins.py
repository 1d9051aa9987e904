"""Families from other packages: the entry-point group ``ragen_bench.envs`` (:data:`PLUGIN_GROUP`),
and :func:`register_all`, which registers the project's ids (:mod:`ragen_bench.registry`) and theirs.

The entry point's *name* is the Gymnasium namespace the plugin owns, and its object is a
sequence of :class:`~ragen_bench.registry.EnvEntry` rows, or a callable returning one::

    # the plugin's pyproject.toml
    [project.entry-points."ragen_bench.envs"]
    mylab = "mylab_envs.rows:ENTRIES"

``import ragen_bench`` registers every row with Gymnasium (:func:`register_all`), and
``ragen-bench envs list`` lists them.  Rows name their env class as a ``"module:Class"``
string, so the class is imported only when an id is made; the module holding the rows
should import nothing heavy either.  A plugin that fails to load, or gives a row that is
not an :class:`~ragen_bench.registry.EnvEntry`, an id outside its namespace, an id without a
version, an id already taken, or an entry point that is not a string, is skipped whole with one
:class:`PluginWarning` naming it: one broken package must not stop anyone's built-in ids.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from importlib import metadata
from typing import Any

import gymnasium
from gymnasium.envs.registration import parse_env_id

from ragen_bench.registry import _BY_ID, ENV_IDS, PLUGIN_ENTRIES, EnvEntry, all_entries

PLUGIN_GROUP = "ragen_bench.envs"
# The project's own namespace: no plugin may register in it.
OWN_NAMESPACE = "RAGEN"


class PluginWarning(RuntimeWarning):
    """A plugin of the ``ragen_bench.envs`` group was skipped; the message names it and why."""


def _plugin_name(point: metadata.EntryPoint) -> str:
    dist = getattr(point, "dist", None)
    source = f" from {dist.name} {dist.version}" if dist is not None else ""
    return f"plugin {point.name!r} ({point.value}{source})"


def _row_problem(row: Any, namespace: str, taken: set[str]) -> str | None:
    """Why ``row`` cannot be registered for the plugin owning ``namespace``, or ``None``."""
    if not isinstance(row, EnvEntry):
        return f"a row is a {type(row).__name__}, not a ragen_bench.registry.EnvEntry"
    try:
        row_namespace, _, version = parse_env_id(row.id)
    except gymnasium.error.Error as error:
        return f"{row.id!r} is not a Gymnasium id ({error})"
    if row_namespace != namespace:
        return f"{row.id!r} is outside its namespace {namespace!r}/ (the entry point's name)"
    if version is None:
        # An id is a promise about its episodes: a change needs a new version, so one must exist.
        return f"{row.id!r} has no version suffix (-v0)"
    if row.id in taken:
        return f"{row.id!r} is already registered"
    if not isinstance(row.entry_point, str) or ":" not in row.entry_point:
        # A string keeps the env's module unimported until the id is made, as Gymnasium's own ids do.
        return f"{row.id!r}: entry_point must be a 'module:Class' string, got {row.entry_point!r}"
    if not isinstance(row.kwargs, dict):
        return f"{row.id!r}: kwargs must be a dict, got {type(row.kwargs).__name__}"
    return None


def plugin_rows(
    points: Iterable[metadata.EntryPoint], taken: Iterable[str], claimed: Iterable[str] = ()
) -> tuple[list[EnvEntry], list[str]]:
    """The rows of ``points`` that may be registered beside the ids in ``taken`` (namespaces in
    ``claimed`` belong to plugins loaded before), and one line per plugin skipped.  Registers
    nothing; a plugin's rows are taken all or none, and its namespace is claimed once."""
    taken, claimed = set(taken), set(claimed)
    accepted: list[EnvEntry] = []
    problems: list[str] = []
    for point in points:
        namespace = point.name
        try:
            if namespace == OWN_NAMESPACE:
                raise ValueError(f"the namespace {OWN_NAMESPACE!r} is ragen-bench's own")
            if namespace in claimed:
                raise ValueError(f"the namespace {namespace!r} is already another plugin's")
            claimed.add(namespace)
            loaded = point.load()
            rows = loaded() if callable(loaded) else loaded
            if isinstance(rows, (str, bytes)) or not isinstance(rows, Sequence):
                raise TypeError(f"gave a {type(rows).__name__}, not a list of EnvEntry rows")
            rows = list(rows)
            mine: set[str] = set()
            for row in rows:
                problem = _row_problem(row, namespace, taken | mine)
                if problem:
                    raise ValueError(problem)
                mine.add(row.id)
        except Exception as error:  # noqa: BLE001 (any failure of foreign code skips that plugin only)
            problems.append(f"ragen-bench: {_plugin_name(point)} skipped: {type(error).__name__}: {error}")
            continue
        accepted += rows
        taken |= mine
    return accepted, problems


def _discovered_plugins() -> list[metadata.EntryPoint]:
    # Sorted, so which of two plugins claiming one namespace wins does not depend on sys.path order.
    return sorted(metadata.entry_points(group=PLUGIN_GROUP), key=lambda point: (point.name, point.value))


# The (name, value) of every entry point looked at, loaded or skipped: each is tried once.
_SEEN_PLUGINS: set[tuple[str, str]] = set()
# The namespaces of the plugins loaded.
_CLAIMED: set[str] = set()


def load_plugins(points: Iterable[metadata.EntryPoint] | None = None) -> list[EnvEntry]:
    """Add the rows of the installed plugins (or of ``points``) to :data:`PLUGIN_ENTRIES`, with one
    :class:`PluginWarning` per plugin skipped; returns the rows added.  An entry point already
    tried is not tried again, so re-registering neither repeats warnings nor loads twice."""
    points = _discovered_plugins() if points is None else list(points)
    new = [point for point in points if (point.name, point.value) not in _SEEN_PLUGINS]
    _SEEN_PLUGINS.update((point.name, point.value) for point in new)
    taken = {*ENV_IDS, *(row.id for row in PLUGIN_ENTRIES), *gymnasium.registry}
    rows, problems = plugin_rows(new, taken, _CLAIMED)
    for problem in problems:
        warnings.warn(problem, PluginWarning, stacklevel=2)
    _CLAIMED.update(parse_env_id(row.id)[0] for row in rows)
    PLUGIN_ENTRIES.extend(rows)
    _BY_ID.update((row.id, row) for row in rows)
    return rows


# The chat views of the ids (ragen_bench.integrations.openenv.gym_env): not ids of the table, made with
# an id (RAGEN/Chat-v0) or a server's URL (RAGEN/Remote-v0).  Entry points as strings: registering
# them imports nothing, and only making RAGEN/Remote-v0 imports openenv.
CHAT_VIEWS = {
    "RAGEN/Chat-v0": "ragen_bench.integrations.openenv.gym_env:ChatEnv",
    "RAGEN/Remote-v0": "ragen_bench.integrations.openenv.gym_env:RemoteEnv",
}


def register_all() -> None:
    """Register every id, the project's and the installed plugins', and the chat views with Gymnasium
    (idempotent: re-import does not warn, and a plugin is loaded once)."""
    load_plugins()
    for view, entry_point in CHAT_VIEWS.items():
        if view not in gymnasium.registry:
            gymnasium.register(id=view, entry_point=entry_point, disable_env_checker=True)
    for row in all_entries():
        if row.id in gymnasium.registry:
            continue
        gymnasium.register(
            id=row.id,
            entry_point=row.entry_point,
            kwargs=dict(row.kwargs),
            # Truncation (100 steps, as RAGEN) lives inside the env so that the
            # class used directly behaves exactly like the registered id.
            max_episode_steps=None,
            # TextEnv already refuses bad seeds, options and actions.  Gymnasium's
            # passive checker adds nothing, and when the first reset is refused
            # (reset(seed=-1)) it crashes on a later step with a bare TypeError
            # (gymnasium 1.4: its reuse check unpacks the reset data it never got).
            disable_env_checker=True,
        )
