"""The ``ragen-bench`` command.

Subcommands::

    ragen-bench eval key=value ...            evaluate an agent (Hydra overrides of configs/eval.yaml)
    ragen-bench merge --out DIR RUN [RUN ...] combine shard run directories
    ragen-bench compare RUN [RUN ...]         one table across run directories
    ragen-bench envs list                     registered env ids and their panels
    ragen-bench envs show ID                  one env: rules, symbols, actions, panels
    ragen-bench envs verify [ID ...]          regenerate panels and check their checksums
    ragen-bench leaderboard verify PATH       check a submission by replaying every episode
    ragen-bench leaderboard build             leaderboard/ tables, plots and page from submissions
    ragen-bench leaderboard compare A B       paired test of two submissions on the same instances
    ragen-bench leaderboard ladder [PATH ...] verify game submissions, print each game's rating ladder
    ragen-bench train [preset=NAME] key=value ... [--dry-run] [-- VERL_KEY=VALUE ...]  StarPO / StarPO-S / SFT
    ragen-bench data sft ENV --split train --out DIR            the optimal agent's chat records (SFT data)
    ragen-bench render RUN_DIR --episode K [--out FILE.gif|.mp4]  replay an episode of a run as an animation
    ragen-bench play ENV_ID [--seed N] [--split test] [--opponent NAME] [--out RUN_DIR]  play it yourself
    ragen-bench serve ID|SUITE [...] [--port 8000] [--max-sessions 64] [--mcp [--stdio]]  an OpenEnv or MCP server

This module only parses arguments, dispatches to the module that does the work (:mod:`ragen_bench.eval`,
:mod:`ragen_bench.catalog` for ``envs``, :mod:`ragen_bench.train`, :mod:`ragen_bench.leaderboard`,
:mod:`ragen_bench.integrations.openenv.command` for ``serve``), prints what it returns and maps errors to exit codes.
Heavy imports happen inside the subcommand that needs them, so ``ragen-bench envs list`` starts fast.

Exit status: 0 done, 1 ``envs verify`` found drift, 2 a usage error (one stderr line naming the key or file), 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ragen_bench.integrations.openenv.command import add_serve as _add_serve
from ragen_bench.leaderboard.ladder_command import add_ladder

# Exit status of a command stopped by Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130


def _eval(args: argparse.Namespace) -> int:
    from ragen_bench.eval import compose_config, report, run_eval

    config = compose_config("eval", args.overrides)
    if config.get("launcher") == "ray":
        # Only here is ray imported: a local run never pays for it.
        from ragen_bench.integrations.ray import run_eval_on_ray

        result = run_eval_on_ray(config)
    else:
        result = run_eval(config)
    manifest, summary = report.load_summary(result.out)
    print(report.screen_table(report.run_rows(manifest, summary)))
    _print_games([(None, summary)])
    if result.duplicate_lines:
        print(f"\nnote: ignored {result.duplicate_lines} duplicate line(s) in {result.out / 'episodes.jsonl'}")
    state = "complete" if result.complete else "incomplete (re-run the same command to resume)"
    print(f"\n{result.new_episodes} new episodes; run {state}: {result.out}")
    return 0


def _print_games(summaries: Sequence[tuple[str | None, dict]]) -> None:
    """The win/draw/loss table of the game runs among ``(label, summary)``; a label adds a ``run`` column."""
    from ragen_bench.eval.games import table_rows
    from ragen_bench.eval.report import screen_table

    rows = [
        {**({"run": label} if label else {}), **row}
        for label, summary in summaries
        for row in table_rows(summary.get("games", []))
    ]
    if rows:
        print("\n" + screen_table(rows))


def _merge(args: argparse.Namespace) -> int:
    from ragen_bench.eval import merge_runs, report

    summary = merge_runs([Path(p) for p in args.runs], Path(args.out))
    manifest, _ = report.load_summary(Path(args.out))
    print(report.screen_table(report.run_rows(manifest, summary)))
    _print_games([(None, summary)])
    state = "complete" if manifest["complete"] else "incomplete (episodes of the plan are missing)"
    print(f"\nmerged {len(args.runs)} run directories into {args.out}; run {state}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from ragen_bench.eval import report

    if args.paired:
        from ragen_bench.leaderboard.pooled import paired_text

        print(paired_text([Path(run) for run in args.runs], seed=args.seed))
        return 0

    rows, summaries, budgets = [], {}, {}
    for run in args.runs:
        manifest, summary = report.load_summary(Path(run))
        rows.extend(report.run_rows(manifest, summary))
        summaries[run], budgets[run] = summary, report.run_budgets(manifest)
    print(report.screen_table(rows))
    # Game runs of one agent differ by opponent: the games table names each run by its folder.
    _print_games(list(summaries.items()))
    for note in report.comparability_notes(summaries, budgets):
        print(f"note: {note}")
    return 0


def _envs_list(args: argparse.Namespace) -> int:
    from ragen_bench.catalog import env_rows, family_rows
    from ragen_bench.eval.report import format_table

    print(format_table(env_rows()), format_table(family_rows()), sep="\n\n")
    return 0


def _envs_show(args: argparse.Namespace) -> int:
    from ragen_bench.catalog import env_page

    print(env_page(args.env_id, args.seed), end="")
    return 0


def _envs_verify(args: argparse.Namespace) -> int:
    from ragen_bench.catalog import verify_report

    return 0 if verify_report(args.env_ids, print) else 1


def _leaderboard_verify(args: argparse.Namespace) -> int:
    from ragen_bench.leaderboard.verify import verify

    run = verify(Path(args.path))
    print(f"ok {args.path}: {len(run.rows)} episodes ({run.turns} turns) replayed and matched in "
          f"{run.seconds:.2f} s, {run.episodes_per_second:.0f} episodes/s")
    return 0


def _leaderboard_build(args: argparse.Namespace) -> int:
    from ragen_bench.leaderboard.build import build

    for path in build(Path(args.submissions), Path(args.out)):
        print(f"wrote {path}")
    return 0


def _leaderboard_compare(args: argparse.Namespace) -> int:
    from ragen_bench.leaderboard.stats import compare_submissions, format_comparison

    print(format_comparison(compare_submissions(Path(args.a), Path(args.b), seed=args.seed)))
    return 0


def _train(args: argparse.Namespace) -> int:
    from ragen_bench.train.config import from_args
    from ragen_bench.train.schedule import describe

    config = from_args(args.overrides)
    if config.backend == "verl":
        from ragen_bench.integrations.verl import main as verl_main

        # Without verl this prints the install hint and returns 2.
        return int(verl_main(config, dry_run=args.dry_run, extra=args.verl_overrides))
    if args.verl_overrides:
        raise ValueError(f"veRL overrides after '--' ({args.verl_overrides[0]} ...) need backend=verl")
    if args.dry_run:
        from ragen_bench.train.config_help import dry_run_yaml

        print(dry_run_yaml(config))
        print()
        for line in describe(config):
            print(line)
        return 0
    from ragen_bench.train.trainer import train

    result = train(config, progress=lambda message: print(message, file=sys.stderr))
    print(f"trained {result.steps} steps; final checkpoint {result.final_checkpoint / 'model'}")
    print(f"metrics: {result.out / 'metrics.jsonl'}; curves: {result.out / 'curves.png'}")
    if result.test_run is not None:
        print(f"test-panel run directory: {result.test_run}")
    return 0


def _train_keys() -> str:
    from ragen_bench.train.config_help import help_text

    return help_text()


def _data_sft(args: argparse.Namespace) -> int:
    from ragen_bench.chat import ChatConfig
    from ragen_bench.train.sft_data import export_sft

    manifest = export_sft(args.env_id, Path(args.out), split=args.split, limit=args.limit,
                          chat_config=ChatConfig(think=not args.no_think))
    print(f"{manifest['count']} chat records ({len(manifest['seeds_played'])} {args.env_id} {args.split} seeds "
          f"played, lost episodes dropped) in {args.out}: sft.jsonl, sft.parquet, manifest.json")
    return 0


def _render(args: argparse.Namespace) -> int:
    from ragen_bench.render import RenderInterrupted, render_episode

    try:
        path, frames = render_episode(Path(args.run_dir), args.episode, args.out)
    except RenderInterrupted as interrupted:
        # Ctrl-C's usual status, with render's own line: it wrote nothing and has nothing to resume.
        print(f"ragen-bench render: {_one_line(interrupted)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"wrote {path}: episode {args.episode} of {args.run_dir}, {frames} frames")
    return 0


def _play(args: argparse.Namespace) -> int:
    from ragen_bench.agents.terminal import Screen
    from ragen_bench.eval import report
    from ragen_bench.play import play, resume_hint

    screen = Screen(sys.stdout)
    result = play(args.env_id, screen=screen, seed=args.seed, split=args.split, opponent=args.opponent,
                  limit=args.limit, out=args.out)
    if result.summary["groups"]:
        manifest, summary = report.load_summary(result.out)
        screen.line(report.format_table(report.run_rows(manifest, summary)))
    screen.line(resume_hint(result.out, result))
    return 0


def _usage_errors() -> tuple[type[BaseException], ...]:
    """Exception types that mean "bad request", not "bug" (Hydra's only once imported).

    ``OSError`` is among them: out of disk, a read-only file; its message names the file.
    """
    from ragen_bench.chat.protocol import AgentError
    from ragen_bench.envs.base import MissingExtra
    from ragen_bench.eval.rundir import RunDirError
    from ragen_bench.leaderboard.errors import LeaderboardError
    from ragen_bench.panels import PanelError
    from ragen_bench.suites import SuiteError

    errors: list[type[BaseException]] = [
        ValueError, KeyError, OSError, MissingExtra, RunDirError, PanelError, SuiteError, AgentError, LeaderboardError
    ]
    if "hydra" in sys.modules:
        from hydra.errors import HydraException
        from omegaconf.errors import OmegaConfBaseException

        errors += [HydraException, OmegaConfBaseException]
    return tuple(errors)


def _one_line(error: BaseException) -> str:
    """An error as one line: KeyError without its repr quotes, OSError with its file."""
    if isinstance(error, KeyError) and error.args:
        text = str(error.args[0])
    elif isinstance(error, OSError) and error.filename is not None:
        text = f"{error.filename}: {error.strerror or error}"
    else:
        text = str(error)
    return " ".join(text.splitlines())


def _new_dir(text: str) -> str:
    """A directory argument; an empty one would mean the current directory."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must name a directory, got an empty string")
    return text


class _HelpWithKeys(argparse.Action):
    """``-h``: the usual help, then every key with its default and what it means, as ``keys()`` writes them."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, *, keys: Callable[[], str],
                 **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show this help, every key and its default, and exit")
        self.keys = keys

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        parser.print_help()
        print(self.keys(), end="")
        parser.exit()


def _eval_keys() -> str:
    """eval's keys, read from the packaged configs (a wheel has no configs/ folder to open)."""
    from ragen_bench.data import configs_root

    root = configs_root()
    agents = sorted(item.name.removesuffix(".yaml") for item in (root / "agent").iterdir()
                    if item.name.endswith(".yaml"))
    return (f"\nagent=NAME picks an agent config: {', '.join(agents)} (agent.KEY=VALUE sets one of its keys)."
            "\n\nThe keys, their defaults and what they mean (configs/eval.yaml, packaged):\n\n"
            + (root / "eval.yaml").read_text(encoding="utf-8") + "\nchat.KEY=VALUE (configs/chat/default.yaml, packaged):\n\n"
            + (root / "chat" / "default.yaml").read_text(encoding="utf-8"))


def _add_eval(commands: argparse._SubParsersAction) -> None:
    evaluate = commands.add_parser(
        "eval", help="evaluate an agent on an env or suite", add_help=False,
        epilog="Every key, its default and its meaning are listed below. Guide: docs/eval.md in the source "
        "repository. Example: ragen-bench eval env=RAGEN/Sokoban-6x6-v0 agent=random samples=4 limit=32 out=runs/x",
    )
    evaluate.add_argument("-h", "--help", action=_HelpWithKeys, keys=_eval_keys)
    evaluate.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. env=RAGEN/Sokoban-6x6-v0 agent=random")
    evaluate.set_defaults(handler=_eval)


def _add_merge(commands: argparse._SubParsersAction) -> None:
    merge = commands.add_parser("merge", help="combine shard run directories into one")
    merge.add_argument("--out", required=True, type=_new_dir, help="new run directory")
    merge.add_argument("runs", nargs="+", help="shard run directories")
    merge.set_defaults(handler=_merge)


def _add_compare(commands: argparse._SubParsersAction) -> None:
    compare = commands.add_parser("compare", help="print one table across run directories")
    compare.add_argument("runs", nargs="+")
    compare.add_argument("--paired", action="store_true", help=(
        "A B (one pair) or A1 B1 A2 B2 ... (one pair per sampling stream): exact McNemar per pair; pairs pooled by the "
        "exact sign test over all their discordant pairs, a test of these seeds' sampling noise, not of new seeds"))
    compare.add_argument("--seed", type=int, default=0, help="bootstrap seed for --paired (default 0)")
    compare.set_defaults(handler=_compare)


def _add_envs(commands: argparse._SubParsersAction) -> None:
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


def _add_leaderboard(commands: argparse._SubParsersAction) -> None:
    board = commands.add_parser("leaderboard", help="verify submissions, build the leaderboard, compare entries",
                                epilog="Guide: docs/leaderboard.md in the source repository")
    board_commands = board.add_subparsers(dest="leaderboard_command", required=True)
    check = board_commands.add_parser("verify", help="check a submission folder by replaying every episode")
    check.add_argument("path", help="submission folder (submission.json and an eval run directory)")
    check.set_defaults(handler=_leaderboard_verify)
    make = board_commands.add_parser("build", help="verify every submission and write tables, plots and index.html")
    make.add_argument("--submissions", default="leaderboard/submissions", help="default: leaderboard/submissions")
    make.add_argument("--out", default="leaderboard", help="default: leaderboard")
    make.set_defaults(handler=_leaderboard_build)
    pair = board_commands.add_parser("compare", help="paired test of two submissions on identical instances")
    pair.add_argument("a")
    pair.add_argument("b")
    pair.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    pair.set_defaults(handler=_leaderboard_compare)
    add_ladder(board_commands)


def _add_train(commands: argparse._SubParsersAction) -> None:
    training = commands.add_parser(
        "train", help="train a policy with StarPO / StarPO-S (or a supervised warm start)", add_help=False,
        epilog="Presets: configs/train/ (preset= below names them); guide: docs/train.md in the source repository. "
        "Example: ragen-bench train preset=grpo env=RAGEN/Bandit-v0 model=tiny steps=2 out=runs/t",
    )
    training.add_argument("-h", "--help", action=_HelpWithKeys, keys=_train_keys)
    training.add_argument("overrides", nargs="*", help="preset=NAME and Hydra overrides, e.g. rollout.groups=4")
    training.add_argument("--dry-run", action="store_true", help="print the resolved config and the plan; load nothing")
    # With backend=verl, veRL's own key=value overrides follow '--' (split off in main()).
    training.set_defaults(handler=_train, verl_overrides=[])


def _add_data(commands: argparse._SubParsersAction) -> None:
    data = commands.add_parser("data", help="export training data")
    data_commands = data.add_subparsers(dest="data_command", required=True)
    sft = data_commands.add_parser("sft", help="the optimal agent's train-seed episodes as chat records (JSONL + Parquet)")
    sft.add_argument("env_id")
    sft.add_argument("--split", default="train", help="only train (val/test seeds are never exported)")
    sft.add_argument("--out", required=True, type=_new_dir, help="new folder for sft.jsonl, sft.parquet, manifest.json")
    sft.add_argument("--limit", type=int, default=512, help="episodes (default 512)")
    sft.add_argument("--no-think", action="store_true", help="the no-think template (answers without <think>)")
    sft.set_defaults(handler=_data_sft)


def _add_render(commands: argparse._SubParsersAction) -> None:
    render = commands.add_parser("render", help="replay an episode of an eval run as an animated GIF or MP4",
                                 epilog="Needs the render extra: pip install 'ragen-bench[render]'")
    render.add_argument("run_dir", help="an eval run directory (manifest.json, episodes.jsonl)")
    render.add_argument("--episode", type=int, required=True, help="the episode's position in episodes.jsonl, from 0")
    render.add_argument("--out", help="FILE.gif or FILE.mp4 (default: RUN-episode-K.gif here)")
    render.set_defaults(handler=_render)


def _add_play(commands: argparse._SubParsersAction) -> None:
    human = commands.add_parser(
        "play", help="play an env or game yourself in the terminal, recorded as an eval run (agent=human)",
        epilog="Arrow keys where the moves are directions, a typed answer otherwise; q quits. Guide: docs/play.md in the source repository",
    )
    human.add_argument("env_id", help="an env id (ragen-bench envs list), e.g. RAGEN/Sokoban-6x6-v0")
    human.add_argument("--seed", type=int, help="play this panel seed only (default: the panel's seeds in order)")
    human.add_argument("--limit", type=int, help="only the panel's first N seeds")
    human.add_argument("--split", default="test", help="the panel to play (default test)")
    human.add_argument("--opponent", help="games: a scripted player of the game (default: the game's default)")
    human.add_argument("--out", type=_new_dir, help="run directory (default runs/human-ENV-SPLIT[-seedN])")
    human.set_defaults(handler=_play)


# In the order ``ragen-bench --help`` lists the subcommands.
SUBCOMMANDS = (_add_eval, _add_merge, _add_compare, _add_envs, _add_leaderboard, _add_train, _add_data, _add_render,
               _add_play, _add_serve)


def build_parser() -> argparse.ArgumentParser:
    """The ``ragen-bench`` parser: each subcommand from its ``_add_*`` helper, each with its ``handler``."""
    parser = argparse.ArgumentParser(
        prog="ragen-bench", description="Evaluate agents on ragen-bench's text environments and inspect them."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS:
        add(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    verl_overrides: list[str] = []
    if argv[:1] == ["train"] and "--" in argv:
        cut = argv.index("--")
        argv, verl_overrides = argv[:cut], argv[cut + 1 :]
    args = build_parser().parse_args(argv)
    if verl_overrides:
        args.verl_overrides = verl_overrides
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        # Finished episodes are already in episodes.jsonl and the lock is released.
        print(f"ragen-bench {args.command}: interrupted; finished episodes are kept, "
              "re-run the same command to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    except _usage_errors() as error:
        # Usage errors (bad override, different config in out=, missing panel, agent
        # settings) get one clean line; anything else is a bug and keeps its traceback.
        print(f"ragen-bench {args.command}: error: {_one_line(error)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
