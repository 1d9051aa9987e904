"""Generate the frozen TextWorld games of the RAGEN/TextWorld-* ids, once (needs the 'textworld' extra).

Each game is what textworld 1.7.0's ``tw-make <challenge> ... --seed S`` builds, at BALROG's
settings (ragen_bench/data/textworld.py's GAME_TYPES), compiled to .z8 (the format 1.7.0 can
play: its glulx player is gone) and stored gzipped as data/textworld/games/<Type>/<S>.{z8,json}.gz.
TextWorld's generator iterates sets, so the same seed gives other rule orders under another
PYTHONHASHSEED: this script re-runs itself under PYTHONHASHSEED=0.  It never runs at play time;
the checksums of the games it wrote are in data/textworld/games/manifest.json.

    .venv/bin/python scripts/textworld_games.py TreasureHunter 123 124   # some seeds of one type
    .venv/bin/python scripts/textworld_games.py --manifest               # rewrite the manifest
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ragen_bench.data.textworld import GAME_TYPES, WALKTHROUGH_LENGTH  # noqa: E402  (after the path above)

GAMES_DIR = ROOT / "data" / "textworld" / "games"
HASH_SEED = "0"


def _settings(challenge: str, argv: list[str]) -> dict[str, object]:
    """The challenge's settings as tw-make parses them from ``argv`` (its own defaults for the rest)."""
    import textworld.challenges

    parser = argparse.ArgumentParser()
    textworld.challenges.CHALLENGES[challenge][2](parser)
    return vars(parser.parse_args(argv))


def generate(kind: str, seed: int) -> None:
    """Build game ``seed`` of ``kind`` and write its two gzipped files (unless BALROG would skip it)."""
    import textworld
    import textworld.challenges
    from textworld.generator import compile_game

    challenge, argv, only_last_action = GAME_TYPES[kind][:3]
    options = textworld.GameOptions()
    options.seeds = seed
    options.file_ext = ".z8"
    # BALROG's games come from a tw-make that sets this for every challenge: the objective names
    # only the quest's last action (the cooking game, made with the stock tw-make, keeps its own).
    options.grammar.only_last_action = only_last_action
    started = time.time()
    game = textworld.challenges.CHALLENGES[challenge][1](settings=_settings(challenge, list(argv)), options=options)
    length = len(game.metadata["walkthrough"])
    if WALKTHROUGH_LENGTH.get(kind, length) != length:
        print(f"{kind} {seed}: skipped, walkthrough {length}, {time.time() - started:.0f} s", flush=True)
        return
    with tempfile.TemporaryDirectory() as scratch:
        options.path = str(Path(scratch) / str(seed))
        compiled = Path(compile_game(game, options))
        written = {suffix: compiled.with_suffix(suffix).read_bytes() for suffix in (".z8", ".json")}
    target = GAMES_DIR / kind
    target.mkdir(parents=True, exist_ok=True)
    for suffix, data in written.items():
        # mtime=0 and no file name in the header: the same bytes give the same .gz
        with open(target / f"{seed}{suffix}.gz", "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as out:
            out.write(data)
    print(f"{kind} {seed}: walkthrough {length}, {time.time() - started:.0f} s", flush=True)


def manifest() -> dict[str, dict[str, dict[str, str]]]:
    """Every stored game's files -> the sha256 of their uncompressed bytes, by type and seed."""
    table: dict[str, dict[str, dict[str, str]]] = {}
    for path in sorted(GAMES_DIR.glob("*/*.gz")):
        seed, suffix = path.name.removesuffix(".gz").split(".")
        digest = hashlib.sha256(gzip.decompress(path.read_bytes())).hexdigest()
        table.setdefault(path.parent.name, {}).setdefault(seed, {})[suffix] = digest
    return table


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != HASH_SEED:
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": HASH_SEED})
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", nargs="?", choices=sorted(GAME_TYPES))
    parser.add_argument("seeds", nargs="*", type=int)
    parser.add_argument("--manifest", action="store_true", help="write data/textworld/games/manifest.json")
    args = parser.parse_args()
    for seed in args.seeds:
        generate(args.kind, seed)
    if args.manifest:
        (GAMES_DIR / "manifest.json").write_text(json.dumps(manifest(), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
