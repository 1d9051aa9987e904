"""The ``ragen-bench`` command.

Subcommands::

    ragen-bench eval key=value ...            evaluate an agent (Hydra overrides of configs/eval.yaml)
    ragen-bench merge --out DIR RUN [RUN ...] combine shard run directories
    ragen-bench compare RUN [RUN ...]         one table across run directories
    ragen-bench envs list                     registered env ids and their panels
    ragen-bench envs show ID                  one env: rules, symbols, actions, panels
    ragen-bench envs verify [ID ...]          regenerate panels and check their checksums

Heavy imports (Hydra, pandas, the harness) happen inside the subcommand that needs
them, so ``ragen-bench envs list`` starts fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# Summary keys shown in tables, with their column titles.
_TABLE_COLUMNS = {
    "episodes": "episodes",
    "success_rate": "success",
    "mean_return": "return",
    "mean_actions": "actions",
    "mean_turns": "turns",
    "efficiency": "efficiency",
    "valid_action_rate": "valid",
    "effective_action_rate": "effective",
    "format_penalty_rate": "fmt_penalty",
    "tokens_per_episode": "tokens/ep",
}


def config_dir() -> Path:
    """The Hydra config folder: ``configs/`` at the repo root, or ``$RAGEN_BENCH_CONFIGS``."""
    override = os.environ.get("RAGEN_BENCH_CONFIGS")
    return Path(override) if override else Path(__file__).resolve().parent.parent / "configs"


def compose_config(name: str, overrides: Sequence[str]) -> dict[str, Any]:
    """Compose ``configs/<name>.yaml`` with command-line overrides into a plain dict.

    The compose API (not ``@hydra.main``) leaves the working directory alone and
    creates no output folders; missing mandatory values (``???``) raise here.
    """
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(config_dir().resolve()), version_base=None):
        config = compose(config_name=name, overrides=list(overrides))
    return OmegaConf.to_container(config, resolve=True, throw_on_missing=True)  # type: ignore[return-value]


def summary_rows(label: str, summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Table rows (one per env and split) of one run's summary."""
    rows = []
    for group in summary["groups"]:
        row: dict[str, Any] = {"run": label, "env": group["env_id"], "split": group["split"]}
        for key, title in _TABLE_COLUMNS.items():
            row[title] = group.get(key)
            if key == "success_rate":
                low, high = group["success_ci95"]
                row["ci95"] = f"[{low:.3f}, {high:.3f}]"
                row.update({k: v for k, v in group.items() if k.startswith("pass@")})
        rows.append(row)
    return rows


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def format_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Rows as an aligned text table: numbers right-aligned to three decimals, missing values as "-".

    Columns are the union of the rows' keys, in first-seen order.
    """
    if not rows:
        return "(no episodes)"
    columns = list(dict.fromkeys(key for row in rows for key in row))
    cells = [[_cell(row.get(column)) for column in columns] for row in rows]
    widths = [max(len(column), *(len(line[i]) for line in cells)) for i, column in enumerate(columns)]
    numeric = [all(isinstance(row.get(c), (int, float)) or row.get(c) is None for row in rows) for c in columns]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            value.rjust(width) if right else value.ljust(width)
            for value, width, right in zip(values, widths, numeric)
        ).rstrip()

    return "\n".join([line(columns), *(line(values) for values in cells)])


def _eval(args: argparse.Namespace) -> int:
    from ragen_bench.eval import harness

    config = compose_config("eval", args.overrides)
    result = harness.run_eval(config)
    manifest, summary = harness.load_summary(result.out)
    print(format_table(summary_rows(harness.agent_label(manifest), summary)))
    state = "complete" if result.complete else "incomplete (re-run the same command to resume)"
    print(f"\n{result.new_episodes} new episodes; run {state}: {result.out}")
    return 0


def _merge(args: argparse.Namespace) -> int:
    from ragen_bench.eval import harness

    summary = harness.merge_runs([Path(p) for p in args.runs], Path(args.out))
    manifest, _ = harness.load_summary(Path(args.out))
    print(format_table(summary_rows(harness.agent_label(manifest), summary)))
    print(f"\nmerged {len(args.runs)} run directories into {args.out}")
    return 0


def comparability_notes(runs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Warnings for run summaries (by name) whose numbers are not measured alike.

    Numbers compare exactly when the panel checksums and the chat template hash match.
    """
    notes = []
    hashes = {summary["template_hash"] for summary in runs.values()}
    if len(hashes) > 1:
        notes.append(f"runs used {len(hashes)} different chat templates/settings (template_hash)")
    checksums: dict[str, set[str]] = {}
    for summary in runs.values():
        for panel, checksum in summary["panels"].items():
            checksums.setdefault(panel, set()).add(checksum)
    notes += [f"{panel}: runs used different panels" for panel, seen in sorted(checksums.items()) if len(seen) > 1]
    return notes


def _compare(args: argparse.Namespace) -> int:
    from ragen_bench.eval import harness

    rows = []
    summaries = {}
    for run in args.runs:
        manifest, summary = harness.load_summary(Path(run))
        rows.extend(summary_rows(harness.agent_label(manifest), summary))
        summaries[run] = summary
    print(format_table(rows))
    for note in comparability_notes(summaries):
        print(f"note: {note}")
    return 0


def _envs_list(args: argparse.Namespace) -> int:
    from ragen_bench import panels
    from ragen_bench.registry import ENTRIES

    rows = [
        {
            "id": row.id,
            "ragen": row.ragen_name or "-",
            "panels": ",".join(panels.available(row.id)) or "-",
            "description": row.description,
        }
        for row in ENTRIES
    ]
    print(format_table(rows))
    return 0


def _envs_show(args: argparse.Namespace) -> int:
    import gymnasium

    import ragen_bench  # noqa: F401  (registers the ids)
    from ragen_bench import panels
    from ragen_bench.registry import entry

    row = entry(args.env_id)
    env = gymnasium.make(row.id)
    base = env.unwrapped
    print(f"{row.id}  ({row.entry_point}, {row.kwargs})")
    if row.ragen_name:
        print(f"reproduces RAGEN config: {row.ragen_name}")
    print(f"\n{base.instruction}\n")
    for symbol, meaning in base.symbol_meanings.items():
        print(f"  {symbol}  {meaning}")
    names = base.action_names
    print(f"\nactions: {', '.join(names) if names else 'free text'}")
    for split in panels.available(row.id):
        panel = panels.load(row.id, split)
        print(f"panel {split}: {len(panel.seeds)} seeds, checksum {panel.checksum}")
    observation, _ = env.reset(seed=args.seed)
    print(f"\nseed {args.seed}:\n{observation}")
    env.close()
    return 0


def _envs_verify(args: argparse.Namespace) -> int:
    from ragen_bench import panels
    from ragen_bench.registry import ENV_IDS

    failures = 0
    for env_id in args.env_ids or ENV_IDS:
        for split in panels.available(env_id):
            try:
                panels.load(env_id, split).verify()
            except panels.PanelError as error:
                failures += 1
                print(f"FAIL {env_id} {split}: {error}")
            else:
                print(f"ok   {env_id} {split}")
    return 1 if failures else 0


def _usage_errors() -> tuple[type[BaseException], ...]:
    """Exception types that mean "bad request", not "bug" (Hydra's only once imported)."""
    from ragen_bench.eval.rundir import RunDirError
    from ragen_bench.panels import PanelError
    from ragen_bench.suites import SuiteError

    errors: list[type[BaseException]] = [ValueError, KeyError, RunDirError, PanelError, SuiteError]
    if "hydra" in sys.modules:
        from hydra.errors import HydraException
        from omegaconf.errors import OmegaConfBaseException

        errors += [HydraException, OmegaConfBaseException]
    return tuple(errors)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragen-bench", description="Evaluate agents on ragen-bench's text environments and inspect them."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    evaluate = commands.add_parser(
        "eval",
        help="evaluate an agent on an env or suite",
        epilog="Keys and defaults: configs/eval.yaml and configs/agent/*.yaml; guide: docs/eval.md. "
        "Example: ragen-bench eval env=RAGEN/Sokoban-6x6-v0 agent=random samples=4 limit=32 out=runs/x",
    )
    evaluate.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. env=RAGEN/Sokoban-6x6-v0 agent=random")
    evaluate.set_defaults(handler=_eval)

    merge = commands.add_parser("merge", help="combine shard run directories into one")
    merge.add_argument("--out", required=True, help="new run directory")
    merge.add_argument("runs", nargs="+", help="shard run directories")
    merge.set_defaults(handler=_merge)

    compare = commands.add_parser("compare", help="print one table across run directories")
    compare.add_argument("runs", nargs="+")
    compare.set_defaults(handler=_compare)

    envs = commands.add_parser("envs", help="list, show or verify environments")
    env_commands = envs.add_subparsers(dest="envs_command", required=True)
    env_commands.add_parser("list", help="registered ids").set_defaults(handler=_envs_list)
    show = env_commands.add_parser("show", help="one env's rules, symbols, actions and panels")
    show.add_argument("env_id")
    show.add_argument("--seed", type=int, default=123, help="seed of the example state (default 123)")
    show.set_defaults(handler=_envs_show)
    verify = env_commands.add_parser("verify", help="regenerate panels and compare checksums")
    verify.add_argument("env_ids", nargs="*", help="ids to verify (default: all)")
    verify.set_defaults(handler=_envs_verify)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except _usage_errors() as error:
        # Usage errors (bad override, different config in out=, missing panel) get one
        # clean line; anything else is a bug and keeps its traceback.
        print(f"ragen-bench {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
