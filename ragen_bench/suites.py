"""Named generalization suites: train on one panel, evaluate on panels that differ from it.

A suite is one or more tracks; a track names the (env id, split) to train on and the
(env id, split) pairs to evaluate, each tagged with the axis along which it departs
from training (see ``AXES``) and, where a protocol fixes it, the number of episodes
played on it (the first ``episodes`` seeds of the panel; none: the whole panel).
Suites are frozen as JSON in ``data/suites/``, each
panel with its checksum and the whole suite with a checksum over all of them, so a
result that names a suite checksum names every panel it was measured on.

``get(name)`` loads a suite and checks it against the panel files; ``names()`` lists
suites.  The definitions below are the source; the JSON files are written from them
(only ever for a new suite or a new version)::

    python -m ragen_bench.suites build     # write data/suites/*.json from the panels
    python -m ragen_bench.suites verify    # check every suite file against the panels
    python -m ragen_bench.suites balrog    # BALROG's ids present and missing (balrog_definition)
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from importlib.resources.abc import Traversable
from typing import Any

from ragen_bench import panels, runfiles
from ragen_bench.data import balrog, textarena

SUITE_FORMAT = "ragen-bench/suite/v1"

# What a panel changes relative to the training panel.
AXES: dict[str, str] = {
    "training": "the panel trained on",
    "in-distribution": "same env as training, unseen seeds (the test split)",
    "size": "larger grid, with more boxes",
    "vocabulary": "same dynamics, different grid symbols",
    "environment": "a different game with a different action set",
    "arm-names": "same payoffs, arm names never seen in training",
    "arm-semantics": "the names' intuition points to the wrong arm",
}


class SuiteError(RuntimeError):
    """A suite is unknown, malformed, or no longer matches its panels."""


@dataclass(frozen=True)
class SuitePanel:
    env_id: str
    split: str
    axis: str
    panel_checksum: str
    # Episodes a protocol plays on this panel (its first seeds, BALROG's counts); None: every seed.
    episodes: int | None = None


@dataclass(frozen=True)
class Track:
    name: str
    train: SuitePanel
    evaluate: tuple[SuitePanel, ...]


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    tracks: tuple[Track, ...]
    checksum: str

    def panels(self) -> tuple[SuitePanel, ...]:
        """Every panel of every track (training first), without repeats."""
        seen: dict[tuple[str, str], SuitePanel] = {}
        for track in self.tracks:
            for panel in (track.train, *track.evaluate):
                seen.setdefault((panel.env_id, panel.split), panel)
        return tuple(seen.values())

    def episode_counts(self) -> dict[tuple[str, str], int]:
        """``(env id, split) -> episodes`` of the evaluated panels with a count (empty for a suite without)."""
        return {(p.env_id, p.split): p.episodes for t in self.tracks for p in t.evaluate if p.episodes is not None}


# -- definitions ---------------------------------------------------------------------

# name -> (description, tracks as (track name, (train id, split), [(eval id, split, axis)]))
_SOKOBAN_TRACK = (
    "sokoban",
    ("RAGEN/Sokoban-6x6-v0", "train"),
    (
        ("RAGEN/Sokoban-6x6-v0", "test", "in-distribution"),
        ("RAGEN/Sokoban-8x8-v0", "test", "size"),
        ("RAGEN/Sokoban-6x6-AltVocab-v0", "test", "vocabulary"),
        ("RAGEN/FrozenLake-4x4-v0", "test", "environment"),
    ),
)
_BANDIT_TRACK = (
    "bandit",
    ("RAGEN/Bandit-v0", "train"),
    (
        ("RAGEN/Bandit-v0", "test", "in-distribution"),
        ("RAGEN/BanditTest-v0", "test", "arm-names"),
        ("RAGEN/Bandit-HeldOut-v0", "test", "arm-names"),
        ("RAGEN/Bandit-Rev-v0", "test", "arm-semantics"),
    ),
)

# RAGEN-2 (mll-lab-nu/RAGEN 20daedc): one track per experiment config, its es_manager's train
# tag -> its val tags, as each config pairs them (only the bandit pairs a held-out tag).
def _same_tag_track(name: str, env_id: str) -> tuple[Any, ...]:
    return (name, (env_id, "train"), ((env_id, "test", "in-distribution"),))


_RAGEN2_TRACKS = (
    _same_tag_track("sokoban", "RAGEN/Sokoban-6x6-Coord-v0"),  # base.yaml, _2_sokoban.yaml: CoordSokoban
    _same_tag_track("frozen_lake", "RAGEN/FrozenLake-4x4-Coord-NoSlip-v0"),  # _3_frozen_lake.yaml
    (
        "bandit",  # _1_bandit.yaml: train Bandit, validate Bandit and BanditTest
        ("RAGEN/Bandit-R2-v0", "train"),
        (("RAGEN/Bandit-R2-v0", "test", "in-distribution"), ("RAGEN/BanditTest-R2-v0", "test", "arm-names")),
    ),
    _same_tag_track("countdown", "RAGEN/Countdown-v0"),  # _4_countdown.yaml (RAGEN's rules, own instances)
    _same_tag_track("metamathqa", "RAGEN/MathQA-v0"),  # _5_metamathqa.yaml (RAGEN's rules, own questions)
    _same_tag_track("sudoku", "RAGEN/Sudoku-9x9-Easy-v0"),  # _8_sudoku.yaml: SimpleSudoku
    _same_tag_track("2048", "RAGEN/2048-v0"),  # _9_2048.yaml: game_2048
    _same_tag_track("rubikscube", "RAGEN/RubiksCube-2x2-Depth1-v0"),  # _10_rubikscube.yaml: scramble depth 1
)
# breadth-v0: one id per family (several for the libraries with many tasks), each tested on
# its own test panel, so one command gives a score across kinds of task.  Fixed here; a new
# member means breadth-v1.
_BREADTH_IDS = (
    "RAGEN/Sokoban-6x6-v0",
    "RAGEN/FrozenLake-4x4-v0",
    "RAGEN/Bandit-v0",
    "RAGEN/Countdown-v0",
    "RAGEN/MathQA-v0",
    "RAGEN/Sudoku-4x4-v0",
    "RAGEN/2048-v0",
    "RAGEN/RubiksCube-2x2-Depth3-v0",
    "RAGEN/TWX-coin-v0",
    "RAGEN/TWX-mapreader-v0",
    "RAGEN/TWX-arithmetic-v0",
    "RAGEN/RG-basic_arithmetic-v0",
    "RAGEN/RG-chain_sum-v0",
    "RAGEN/RG-letter_counting-v0",
    "RAGEN/RG-word_sorting-v0",
    "RAGEN/RG-family_relationships-v0",
    "RAGEN/RG-maze-v0",
    "RAGEN/RG-knights_knaves-v0",
    "RAGEN/RG-mini_sudoku-v0",
)
_BREADTH_TRACKS = tuple(_same_tag_track(env_id.removeprefix("RAGEN/").removesuffix("-v0"), env_id)
                        for env_id in _BREADTH_IDS)
# textarena-v0: TextArena's single-player games that are ids (the frozen table's order), each tested
# on its own test panel: one command for all of them.  Fixed here; a new game means textarena-v1.
_TEXTARENA_TRACKS = tuple(_same_tag_track(name, f"RAGEN/{name}-v0")
                          for name in (f"TA-{game.removesuffix('-v0')}" for game in textarena.SINGLE_PLAYER))


def balrog_definition(registered: Collection[str]) -> tuple[tuple[str, tuple[Any, ...]], list[str]]:
    """``balrog-v0``'s definition (description, tracks) over the ``registered`` ids, and BALROG's ids not among them.

    One track per id of :data:`ragen_bench.data.balrog.TASKS`: trained on its train panel, tested on
    the first ``EPISODES[world]`` seeds of its test panel, as BALROG plays each task.  A suite never
    gains a member, so ``balrog-v0`` was frozen (over :data:`ragen_bench.data.balrog.NAMED_IDS`) once the
    second list was empty against the registry; ``python -m ragen_bench.suites balrog`` prints both.
    """
    present = [task for task in balrog.TASKS if task.env_id in registered]
    missing = [task.env_id for task in balrog.TASKS if task.env_id is not None and task.env_id not in registered]
    tracks = tuple((task.env_id.removeprefix("RAGEN/").removesuffix("-v0"), (task.env_id, "train"),
                    ((task.env_id, "test", "in-distribution", balrog.EPISODES[task.world]),)) for task in present)
    left_out = sorted({balrog.WORLDS[task.world] for task in balrog.TASKS if task.env_id is None})
    description = (f"BALROG's text track ({balrog.PROTOCOL_SOURCE}): its tasks, each played the episodes BALROG plays "
                   f"it, on the first seeds of the test panel; tasks left out in {', '.join(left_out)} "
                   "(ragen_bench/data/balrog.py says why).")
    return (description, tracks), missing


DEFINITIONS: dict[str, tuple[str, tuple[Any, ...]]] = {
    "ragen-sokoban-generalization-v0": (
        "RAGEN's generalization table: train on 6x6 Sokoban, test on larger rooms, another symbol set and FrozenLake.",
        (_SOKOBAN_TRACK,),
    ),
    "ragen-bandit-generalization-v0": (
        "Train on the Phoenix/Dragon bandit; test on held-out arm names and on reversed name semantics.",
        (_BANDIT_TRACK,),
    ),
    "ragen-generalization-v0": (
        "Both tracks: Sokoban (size, vocabulary, other game) and Bandit (names, reversed semantics).",
        (_SOKOBAN_TRACK, _BANDIT_TRACK),
    ),
    "ragen2-v0": (
        "RAGEN-2's experiments (mll-lab-nu/RAGEN 20daedc config/_*.yaml): each train tag and the tags it is "
        "validated on, for the tags this project provides (no WebShop, ALFWorld, SearchQA, DeepCoder, Lean).",
        _RAGEN2_TRACKS,
    ),
    # BALROG's text track, frozen once every world it plays had its ids (2026-12-03).
    "balrog-v0": balrog_definition(balrog.NAMED_IDS)[0],
    "textarena-v0": (
        "TextArena 0.7.4's single-player games that run offline and deterministically, each on its own test "
        "panel (needs the 'textarena' extra).",
        _TEXTARENA_TRACKS,
    ),
    "breadth-v0": (
        "A fixed sample across families: grid puzzles, bandits, arithmetic, math, Sudoku, 2048, the cube, "
        "TextWorld-Express adventures and reasoning-gym tasks, each on its own test panel "
        "(needs the 'rg' and 'twx' extras and a JVM).",
        _BREADTH_TRACKS,
    ),
}


# -- files ---------------------------------------------------------------------------


def suites_dir() -> Traversable:
    return panels.data_dir() / "suites"


def suite_path(name: str) -> Traversable:
    return suites_dir() / f"{name}.json"


def names() -> list[str]:
    """Suites with a frozen file in ``data/suites/``, sorted."""
    return sorted(
        path.name.removesuffix(".json")
        for path in suites_dir().iterdir()
        if path.name.endswith(".json") and path.is_file()
    )


def _panel_json(panel: SuitePanel) -> dict[str, Any]:
    # No "episodes" key without a count: the files (and checksums) of suites frozen before counts stay as they were.
    counted = {} if panel.episodes is None else {"episodes": panel.episodes}
    return {"env_id": panel.env_id, "split": panel.split, "axis": panel.axis, "panel_checksum": panel.panel_checksum,
            **counted}


def _tracks_json(tracks: tuple[Track, ...]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "train": _panel_json(t.train), "evaluate": [_panel_json(p) for p in t.evaluate]}
        for t in tracks
    ]


def suite_checksum(name: str, tracks: tuple[Track, ...]) -> str:
    """SHA-256 over the suite's name and every panel (ids, splits, axes, panel checksums).

    The description is prose and is left out: rewording it does not change the suite.
    """
    canonical = json.dumps({"name": name, "tracks": _tracks_json(tracks)}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def generate(name: str) -> Suite:
    """A suite from its definition and the current panel files."""
    if name not in DEFINITIONS:
        raise SuiteError(f"no definition for suite {name!r}; defined: {', '.join(DEFINITIONS)}")
    description, raw_tracks = DEFINITIONS[name]

    def frozen(env_id: str, split: str, axis: str, episodes: int | None = None) -> SuitePanel:
        return SuitePanel(env_id, split, axis, panels.load(env_id, split).checksum, episodes)

    tracks = tuple(
        Track(track_name, frozen(*train, "training"), tuple(frozen(*spec) for spec in evaluate))
        for track_name, train, evaluate in raw_tracks
    )
    return Suite(name, description, tracks, suite_checksum(name, tracks))


def write(suite: Suite) -> Path:
    """Write a suite file into the checkout's ``data/suites/`` (maintainers only)."""
    path = Path(str(suite_path(suite.name)))
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "format": SUITE_FORMAT,
        "name": suite.name,
        "description": suite.description,
        "checksum": suite.checksum,
        "tracks": _tracks_json(suite.tracks),
    }
    runfiles.write_text_atomic(path, json.dumps(data, indent=1) + "\n")
    return path


def _parse_panel(data: dict[str, Any]) -> SuitePanel:
    episodes = data.get("episodes")
    if episodes is not None and (type(episodes) is not int or episodes < 1):
        raise ValueError(f"episodes must be a positive integer, got {episodes!r}")
    panel = SuitePanel(str(data["env_id"]), str(data["split"]), str(data["axis"]), str(data["panel_checksum"]), episodes)
    if panel.axis not in AXES:
        raise ValueError(f"unknown axis {panel.axis!r}")
    return panel


def _check_counts(name: str, suite: Suite, check_panels: bool) -> None:
    """One count per evaluated panel (tracks sharing a panel agree), each within the panel's seeds."""
    counts = suite.episode_counts()
    for track in suite.tracks:
        for panel in track.evaluate:
            if panel.episodes != counts.get((panel.env_id, panel.split)):
                raise SuiteError(f"suite {name}: panel {panel.env_id}/{panel.split} has different episode counts "
                                 "in different tracks")
    for (env_id, split), episodes in counts.items() if check_panels else ():
        seeds = len(panels.load(env_id, split).seeds)
        if episodes > seeds:
            raise SuiteError(f"suite {name}: {episodes} episodes on {env_id}/{split}, whose panel has {seeds} seeds")


def get(name: str, *, check_panels: bool = True) -> Suite:
    """Load suite ``name``; checks its own checksum and (by default) each panel's.

    A panel check compares the checksum the suite recorded with the panel file's, so a
    rebuilt panel cannot silently change what a suite means.
    """
    path = suite_path(name)
    if not path.is_file():
        raise SuiteError(f"unknown suite {name!r}; available: {', '.join(names()) or 'none'}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        tracks = tuple(
            Track(str(t["name"]), _parse_panel(t["train"]), tuple(_parse_panel(p) for p in t["evaluate"]))
            for t in data["tracks"]
        )
        suite = Suite(str(data["name"]), str(data["description"]), tracks, str(data["checksum"]))
    except (KeyError, TypeError, ValueError, RecursionError) as error:  # Recursion: JSON nested too deep
        raise SuiteError(f"{path}: malformed suite file ({error!r})") from None
    if suite.name != name:
        raise SuiteError(f"{path}: file is for suite {suite.name!r}, not {name!r}")
    if suite.checksum != suite_checksum(suite.name, suite.tracks):
        raise SuiteError(f"{path}: checksum does not match the suite's panels")
    if check_panels:
        for panel in suite.panels():
            actual = panels.load(panel.env_id, panel.split).checksum
            if actual != panel.panel_checksum:
                raise SuiteError(
                    f"suite {name}: panel {panel.env_id}/{panel.split} has checksum {actual[:12]}..., "
                    f"the suite recorded {panel.panel_checksum[:12]}...; a changed panel needs a new suite version"
                )
    _check_counts(name, suite, check_panels)
    return suite


def episode_counts(name: str | None, targets: Collection[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """The episode counts suite ``name`` sets on ``targets``, its (env id, split) pairs (none for no suite)."""
    counts = get(name, check_panels=False).episode_counts() if name is not None else {}
    return {pair: counts[pair] for pair in targets if pair in counts}


def _main(argv: list[str]) -> int:
    if argv[:1] == ["balrog"]:
        from ragen_bench.registry import ENV_IDS

        (_, tracks), missing = balrog_definition(ENV_IDS)
        print("\n".join([*(f"present  {train[0]}  {evaluate[0][3]} episodes" for _, train, evaluate in tracks),
                          *(f"missing  {env_id}" for env_id in missing)]))
        return 0
    if not argv or argv[0] not in ("build", "verify"):
        print(__doc__)
        return 2
    for name in argv[1:] or (list(DEFINITIONS) if argv[0] == "build" else names()):
        if argv[0] == "build":
            suite = generate(name)
            print(f"{write(suite)}  {suite.checksum}")
        else:
            print(f"ok  {name}  {get(name).checksum}")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
