"""reasoning-gym's datasets as ids: the facts about the library the env, the catalog and the card share.

The ids themselves are ``ragen_bench.data.reasoning_gym.DATASETS`` (frozen data: registering them imports
nothing): reasoning-gym 0.1.25's registry (106 datasets) minus the eight in
:data:`LEFT_OUT`.  A new library version is a new table (and, where items change, new
panels under new id versions), never an edit of this one: the panels' checksums say so.
"""

from __future__ import annotations

from ragen_bench import registry

LIBRARY = "reasoning_gym"
LIBRARY_VERSION = "0.1.25"
EXTRA = "rg"
INSTALL_HINT = f"reasoning-gym ids need the '{EXTRA}' extra: pip install 'ragen-bench[{EXTRA}]'"
FAMILY = "reasoning_gym"

# The datasets that are ids: frozen in the id table (the registry sits below the envs).
DATASETS: tuple[str, ...] = registry.RG_DATASETS
_ENV_IDS = {row.kwargs["dataset"]: row.id for row in registry.ENTRIES if row.family == FAMILY}

# Datasets whose item stores no answer (None) but whose generator keeps a solution of its
# own in the item's metadata: that solution is the reference answer (it scores 1.0).
# propositional_logic stores none either; its reference is solved (env.reference_answer).
REFERENCE_METADATA_KEYS: dict[str, str] = {
    "graph_color": "possible_answer",
    "rubiks_cube": "example_correct_answer",
}

LEFT_OUT: dict[str, str] = {
    "boxnet": "the item stores no answer and no solution (answer None, so the stored answer scores 0); "
    "a reference agent needs a multi-agent box-moving planner, not written",
    "rush_hour": "the item stores no answer and no solution, only the minimum number of moves; "
    "a reference agent needs a sliding-block search, not written",
    "composite": "a mixture of other datasets that must be configured with a list of them "
    "(its default config raises 'Must specify at least one dataset'); each member is an id here",
    # A seed must give the same item in every process, or no panel can pin it.
    **dict.fromkeys(
        ("isomorphic_strings", "polynomial_multiplication", "ransom_note"),
        "its items depend on the process's string hashing (PYTHONHASHSEED): it draws with "
        "rng.choice from a list made of a set, so a seed's item differs between processes",
    ),
    **dict.fromkeys(
        ("codeio", "list_functions"),
        "a seed's item differs between processes even with one PYTHONHASHSEED (not reproducible)",
    ),
}


def env_id(dataset: str) -> str:
    """The registered id of ``dataset`` (``RAGEN/RG-<dataset>-v0``)."""
    return _ENV_IDS[dataset]
