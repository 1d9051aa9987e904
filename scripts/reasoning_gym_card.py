"""Write the id table of data/reasoning_gym/README.md from the library and the frozen panels.

    .venv/bin/python scripts/reasoning_gym_card.py   # rewrites the part between the markers

Per id: the dataset's category, its default config (what the registered id uses), whether
it has a curriculum (``difficulty="easy"/"hard"``), and its panels' checksums.  Run it
only with the pinned library version (a new version is a new table, see ids.py).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import re
import sys
from pathlib import Path

from ragen_bench import panels
from ragen_bench.envs.reasoning_gym import ids

CARD = Path(__file__).resolve().parents[1] / "data" / ids.FAMILY / "README.md"
BEGIN, END = "<!-- id table: scripts/reasoning_gym_card.py -->", "<!-- end of id table -->"
# Settings every config has and the env decides (an item is item 0 of the seed's dataset).
ENV_FIELDS = {"seed", "size"}


def config_text(config_class: type) -> str:
    """The default config's fields as ``name=value`` (the registered id's settings)."""
    values = []
    for field in dataclasses.fields(config_class):
        if field.name in ENV_FIELDS:
            continue
        if field.default is not dataclasses.MISSING:
            value = field.default
        elif field.default_factory is not dataclasses.MISSING:
            value = field.default_factory()
        else:
            value = "(required)"
        values.append(f"{field.name}={value!r}")
    # Pipes would end the table cell; a few defaults are long word lists.
    return ", ".join(values).replace("|", "\\|") or "(none)"


def table() -> str:
    import reasoning_gym.factory as factory

    lines = ["| id | category | default config | easy/hard |", "|---|---|---|---|"]
    for name in ids.DATASETS:
        data_class, config_class = factory.DATASETS[name]
        category = data_class.__module__.split(".")[1]
        curriculum = "yes" if name in factory.CURRICULA else "-"
        lines.append(f"| `{ids.env_id(name)}` | {category} | {config_text(config_class)} | {curriculum} |")
    lines += ["", "Panel checksums (train, val, test):", ""]
    for name in ids.DATASETS:
        env_id = ids.env_id(name)
        checksums = ", ".join(f"`{panels.load(env_id, split).checksum}`" for split in panels.SPLITS)
        lines.append(f"- `{env_id}`: {checksums}")
    return "\n".join(lines)


def main() -> int:
    version = importlib.metadata.version("reasoning-gym")
    if version != ids.LIBRARY_VERSION:
        print(f"reasoning-gym {version} is installed; the table is for {ids.LIBRARY_VERSION}", file=sys.stderr)
        return 1
    text = CARD.read_text(encoding="utf-8")
    block = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    CARD.write_text(block.sub(lambda _: f"{BEGIN}\n{table()}\n{END}", text), encoding="utf-8")
    print(f"wrote {CARD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
