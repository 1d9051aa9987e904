"""Frozen seed panels: which seeds make up each split, and proof of what they produce.

A panel file (``data/<family>/panels/<name>/<split>.json``) lists the seeds of one
split of one env id together with the SHA-256 of the initial observation each seed
produces, and a checksum over all of that.  Results name the checksum, so two
numbers are comparable exactly when their panel checksums match.  ``Panel.verify``
regenerates every level and fails loudly, naming the seed, if the generator has
drifted -- which would require a new env version, never an edited panel.  For a
multi-agent game the hashed text is what the seed decides there (seat, opponent
tie-breaks, horizon; see :mod:`ragen_bench.games.seeds`).

Splits:

* ``train`` -- the open-ended range ``seed_start, seed_start + 1, ...``; the file pins a
  prefix (``TRAIN_PREFIX`` seeds) so that drift in training levels is caught too.
* ``val``  -- 256 seeds from 1000 (disjoint from train and test).
* ``test`` -- 256 seeds 123..378: RAGEN's validation panel, so numbers line up with
  the paper.

Build or refresh the files (only ever for a new id or version)::

    python -m ragen_bench.panels build                 # every registered id
    python -m ragen_bench.panels build RAGEN/Foo-v0    # some ids
    python -m ragen_bench.panels verify                # regenerate and compare all
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterator, Mapping
from importlib.resources.abc import Traversable
from typing import Any

import gymnasium

from ragen_bench import data, runfiles
from ragen_bench.games.registry import GAME_IDS, game_entry
from ragen_bench.registry import ENV_IDS, entry

# v2: the checksum covers every field of the file (v1 covered id, split, seeds and hashes).
PANEL_FORMAT = "ragen-bench/panel/v2"
_SHA256 = re.compile(r"[0-9a-f]{64}")
TRAIN_SEED_START = 10_000
TRAIN_PREFIX = 256
DEFAULT_SPLIT_SEEDS: dict[str, range] = {
    "train": range(TRAIN_SEED_START, TRAIN_SEED_START + TRAIN_PREFIX),
    "val": range(1000, 1256),
    "test": range(123, 379),
}
SPLITS = tuple(DEFAULT_SPLIT_SEEDS)


class PanelError(RuntimeError):
    """A panel file is missing, malformed, or no longer matches its env."""


def data_dir() -> Traversable:
    """The frozen-data folder: ``data/`` of the checkout, or its copy inside the wheel."""
    return data.data_root()


def family(env_id: str) -> str:
    """Folder name of an id's family under ``data/`` (``sokoban``), from the id table (or the games' table)."""
    return game_entry(env_id).family if env_id in GAME_IDS else entry(env_id).family


def panel_path(env_id: str, split: str) -> Traversable:
    name = env_id.split("/", 1)[-1]
    return data_dir() / family(env_id) / "panels" / name / f"{split}.json"


def observation_sha256(observation: str) -> str:
    return hashlib.sha256(observation.encode("utf-8")).hexdigest()


def _canonical_checksum(fields: Mapping[str, Any]) -> str:
    """SHA-256 of a panel file's fields (all but ``checksum``) in canonical JSON."""
    canonical = json.dumps(dict(fields), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


@dataclass(frozen=True)
class Panel:
    """One split of one env id: its seeds and the SHA-256 of what each seed produces.

    ``checksum`` covers every field of the file (format, id, split, count, seeds,
    hashes, ``seed_start`` and ``optimal_length``), so no edit of a panel file passes
    :func:`load`; :meth:`verify` additionally regenerates every level.
    """

    env_id: str
    split: str
    seeds: tuple[int, ...]
    obs_sha256: tuple[str, ...]
    seed_start: int | None = None  # train only: the open range starts here
    optimal_length: tuple[int | None, ...] | None = None  # difficulty metadata, where known

    def fields(self) -> dict[str, Any]:
        """What the file holds besides its checksum, in file order."""
        data: dict[str, Any] = {
            "format": PANEL_FORMAT,
            "env_id": self.env_id,
            "split": self.split,
            "num_seeds": len(self.seeds),
        }
        if self.seed_start is not None:
            data["seed_start"] = self.seed_start
        data["seeds"] = list(self.seeds)
        data["obs_sha256"] = list(self.obs_sha256)
        if self.optimal_length is not None:
            data["optimal_length"] = list(self.optimal_length)
        return data

    @property
    def checksum(self) -> str:
        return _canonical_checksum(self.fields())

    def verify(self) -> None:
        """Regenerate every seed and raise :class:`PanelError` on the first mismatch."""
        lengths = self.optimal_length or (None,) * len(self.seeds)
        for seed, expected, expected_length in zip(self.seeds, self.obs_sha256, lengths, strict=True):
            observation, info = _reset(self.env_id, seed)
            actual = observation_sha256(observation)
            if actual != expected:
                raise PanelError(
                    f"{self.env_id} {self.split}: seed {seed} now produces a different initial "
                    f"observation (sha256 {actual[:12]}..., panel says {expected[:12]}...). "
                    "A generator change needs a new env version."
                )
            if self.optimal_length is not None and info.get("optimal_length") != expected_length:
                raise PanelError(
                    f"{self.env_id} {self.split}: seed {seed} now has optimal_length "
                    f"{info.get('optimal_length')}, the panel says {expected_length}"
                )

    def to_json(self) -> dict[str, Any]:
        data = self.fields()
        data["checksum"] = self.checksum
        return data


_MAKE_CACHE: dict[str, gymnasium.Env] = {}


def initial_observation(env_id: str, seed: int) -> str:
    """The observation ``reset(seed=seed)`` gives (one cached env per id)."""
    return _reset(env_id, seed)[0]


def _reset(env_id: str, seed: int) -> tuple[str, dict[str, Any]]:
    if env_id in GAME_IDS:
        # A multi-agent game has no single observation: its panels pin what the seed decides.
        from ragen_bench.games.seeds import seed_view

        return seed_view(env_id, seed)
    return _env(env_id).reset(seed=seed)


def _env(env_id: str) -> gymnasium.Env:
    env = _MAKE_CACHE.get(env_id)
    if env is None:
        env = _MAKE_CACHE[env_id] = gymnasium.make(env_id).unwrapped
    return env


def split_seeds(env_id: str, split: str) -> range:
    """The seeds a new panel of ``split`` holds: the defaults, or a family's own ``split_seeds``
    (TextWorld-Express keeps its library's dev and test seed lists)."""
    own = game_entry(env_id).split_seeds if env_id in GAME_IDS else getattr(_env(env_id), "split_seeds", None)
    return (own or DEFAULT_SPLIT_SEEDS)[split]


def generate(env_id: str, split: str) -> Panel:
    """Generate the panel of ``split`` for ``env_id`` from the live env."""
    seeds = tuple(split_seeds(env_id, split))
    hashes, lengths = [], []
    for seed in seeds:
        observation, info = _reset(env_id, seed)
        hashes.append(observation_sha256(observation))
        lengths.append(info.get("optimal_length"))
    has_lengths = any(length is not None for length in lengths)
    return Panel(
        env_id=env_id,
        split=split,
        seeds=seeds,
        obs_sha256=tuple(hashes),
        seed_start=seeds[0] if split == "train" else None,
        optimal_length=tuple(lengths) if has_lengths else None,
    )


def write(panel: Panel) -> Path:
    """Write a panel file into the checkout's ``data/`` (maintainers only, never at run time)."""
    path = Path(str(panel_path(panel.env_id, panel.split)))
    path.parent.mkdir(parents=True, exist_ok=True)
    runfiles.write_text_atomic(path, json.dumps(panel.to_json(), indent=1) + "\n")
    return path


def load(env_id: str, split: str) -> Panel:
    """Read a frozen panel and check the file against its own checksum (not the live env: see verify)."""
    path = panel_path(env_id, split)
    if not path.is_file():
        raise PanelError(f"no {split!r} panel for {env_id} (expected a file at {path}); splits: {available(env_id)}")
    try:
        raw = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:  # Recursion: nested too deep
        raise PanelError(f"{path}: not a UTF-8 JSON file ({type(error).__name__}: {error})") from None
    panel = _parse(path, raw)
    if (panel.env_id, panel.split) != (env_id, split):
        raise PanelError(f"{path}: file is for {panel.env_id}/{panel.split}, not {env_id}/{split}")
    return panel


_FIELDS = ("format", "env_id", "split", "num_seeds", "seed_start", "seeds", "obs_sha256", "optimal_length", "checksum")
_REQUIRED = ("format", "env_id", "split", "num_seeds", "seeds", "obs_sha256", "checksum")


def _parse(path: Traversable, raw: Any) -> Panel:
    """A :class:`Panel` from a file's JSON, or :class:`PanelError` naming the field at fault."""

    def fail(reason: str) -> PanelError:
        return PanelError(f"{path}: {reason}")

    if not isinstance(raw, dict):
        raise fail(f"expected a JSON object, got {type(raw).__name__}")
    if unknown := sorted(set(raw) - set(_FIELDS)):
        raise fail(f"unknown field(s) {unknown}")
    if missing := [name for name in _REQUIRED if name not in raw]:
        raise fail(f"missing field(s) {missing}")
    if raw["format"] != PANEL_FORMAT:
        raise fail(f"format is {raw['format']!r}; this version reads {PANEL_FORMAT!r}")
    seeds, hashes, lengths = raw["seeds"], raw["obs_sha256"], raw.get("optimal_length")
    if not isinstance(seeds, list) or not all(_is_int(seed) and seed >= 0 for seed in seeds):
        raise fail("seeds must be a list of non-negative integers")
    if not isinstance(hashes, list) or not all(isinstance(h, str) and _SHA256.fullmatch(h) for h in hashes):
        raise fail("obs_sha256 must be a list of 64-digit lower-case hex digests")
    if lengths is not None and (
        not isinstance(lengths, list) or not all(n is None or (_is_int(n) and n >= 0) for n in lengths)
    ):
        raise fail("optimal_length must be a list of non-negative integers or nulls")
    counts = {"seeds": len(seeds), "obs_sha256": len(hashes)}
    if lengths is not None:
        counts["optimal_length"] = len(lengths)
    if not _is_int(raw["num_seeds"]) or set(counts.values()) != {raw["num_seeds"]}:
        raise fail(f"num_seeds is {raw['num_seeds']!r} but the lists hold {counts}")
    seed_start = raw.get("seed_start")
    if seed_start is not None and (not seeds or seed_start != seeds[0]):
        raise fail(f"seed_start {seed_start!r} is not the first seed")
    panel = Panel(
        env_id=str(raw["env_id"]),
        split=str(raw["split"]),
        seeds=tuple(seeds),
        obs_sha256=tuple(hashes),
        seed_start=seed_start,
        optimal_length=None if lengths is None else tuple(lengths),
    )
    if raw["checksum"] != panel.checksum:
        raise fail(f"checksum {str(raw['checksum'])[:12]}... does not match the contents ({panel.checksum[:12]}...)")
    return panel


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# Families whose first observation does not identify the level: every Bandit seed shows one of
# two arm orders, and the level is the seed's hidden payoff draw; a TextWorld-Express coin game
# opens in the same kitchen for many seeds (the coin is hidden elsewhere), and its folds are
# apart by design.  Their train seeds are decontaminated by seed (no held-out seed is ever
# used), not by observation.
SEED_IDENTIFIED_FAMILIES = frozenset({"bandit", "textworld_express"})
# Consecutive train seeds that repeat a held-out level before decontaminated_train_seeds gives up.
MAX_REJECTED_IN_A_ROW = 10_000


def decontaminated_train_seeds(env_id: str, exclude: tuple[str, ...] = ("val", "test")) -> Iterator[int]:
    """Train seeds from ``seed_start`` upward, skipping seeds whose level is in ``exclude``.

    Small rooms repeat levels across seeds (on 6x6, 204 of the 256 test levels recur
    among the first 100k train seeds: see ``data/sokoban/collisions.json``), so a
    trainer that must never see an evaluation level draws its seeds from here.  Held-out
    seeds themselves are always skipped; for :data:`SEED_IDENTIFIED_FAMILIES` that is all.
    """
    held_out_seeds = {seed for split in exclude for seed in load(env_id, split).seeds}
    seed = load(env_id, "train").seed_start
    if family(env_id) in SEED_IDENTIFIED_FAMILIES:
        while True:
            if seed not in held_out_seeds:
                yield seed
            seed += 1
    held_out = {digest for split in exclude for digest in load(env_id, split).obs_sha256}
    rejected = 0
    while True:
        if seed not in held_out_seeds and observation_sha256(initial_observation(env_id, seed)) not in held_out:
            rejected = 0
            yield seed
        else:
            rejected += 1
            # An id with fewer levels than its panels hold (a 2x2 cube scrambled by one turn
            # has 12) has no fresh train level left: say so instead of searching forever.
            if rejected == MAX_REJECTED_IN_A_ROW:
                raise PanelError(
                    f"{env_id}: the {rejected} train seeds up to {seed} all repeat a {'/'.join(exclude)} level; "
                    "its levels are fewer than its panels (see its card), so no decontaminated train seed is left"
                )
        seed += 1


def available(env_id: str) -> list[str]:
    """Splits that have a panel file for ``env_id``."""
    return [split for split in SPLITS if panel_path(env_id, split).is_file()]


def _main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("build", "verify"):
        print(__doc__)
        return 2
    ids = argv[1:] or [*ENV_IDS, *GAME_IDS]
    for env_id in ids:
        for split in SPLITS:
            if argv[0] == "build":
                panel = generate(env_id, split)
                print(f"{write(panel)}  {panel.checksum}")
            elif split in available(env_id):
                load(env_id, split).verify()
                print(f"ok  {env_id} {split}")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
