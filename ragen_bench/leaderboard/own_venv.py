"""Replaying an episode record, here or in the virtualenv of the id's extra.

An extra that cannot join the main install (``catalog.OWN_VENV_EXTRAS``: nle pins gymnasium
1.2.0, so the ``nethack`` extra lives in ``.venv-nethack``) would leave its ids unverifiable where
``leaderboard verify`` and ``build`` run.  Their records are replayed by the same rule
(:func:`replay_checked`) in a worker process of that venv's interpreter
(:mod:`.own_venv_worker`): it reads the run's config and the records on stdin and writes one
verdict a record on stdout (``null``, or the refusal's problem and place), and verify raises a
refusal exactly as if the replay had run here.  The page's viewer has their frames drawn there
too.  Which interpreter: the one named by ``RAGEN_BENCH_<EXTRA>_PYTHON``, else ``.venv-<extra>`` in
the checkout (where the extra's setup script makes it), else one error line naming the command that
builds it.

The worker must run this very code, or its verdicts would be another version's: it refuses to
start unless a fingerprint of its ``ragen_bench`` sources equals the caller's.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragen_bench import catalog
from ragen_bench.leaderboard.errors import LeaderboardError, as_leaderboard_error
from ragen_bench.leaderboard.tokens import check_tokens

# The checkout this code runs from: its own-venv extras' venvs and scripts are here.
PACKAGE = Path(__file__).resolve().parents[1]
CHECKOUT = PACKAGE.parent
# The worker (``python -I -m WORKER``), and its exit status when its sources differ from the caller's.
WORKER = "ragen_bench.leaderboard.own_venv_worker"
OTHER_CODE = 3


def replay_checked(record: Mapping[str, Any], env: Any, chat_config: Any, *,
                   where: Mapping[str, Any]) -> dict[str, Any]:
    """Replay one episode record on ``env``; the record once it matches, else :class:`LeaderboardError`.

    The rule is :func:`ragen_bench.eval.replay.replay_episode` (``ragen-bench render`` applies it too);
    token counts, which replay cannot reproduce, are checked here after it.
    """
    from ragen_bench.eval.replay import replay_episode

    try:
        with as_leaderboard_error():
            prompts = replay_episode(record, env, chat_config, where=where)
        turns = record["turns"]
        # Last: what replay cannot reproduce, once everything it can has matched.
        for number, (turn, prompt) in enumerate(zip(turns, prompts), start=1):
            check_tokens(turn, prompt, chat_config, {**where, "turn": number})
    except RecursionError:
        # Values nested just under the parser's limit can still exhaust the stack when compared.
        raise LeaderboardError("a value is nested too deeply", **where) from None
    return dict(record)


# -- the caller's side -----------------------------------------------------------------


def elsewhere(env_ids: Iterable[str]) -> dict[str, str]:
    """``{env id: extra}`` of the ids that must be replayed in their extra's own venv: the extra lives in
    one (``catalog.OWN_VENV_EXTRAS``) and is not installed here."""
    from ragen_bench.registry import entry

    found = {}
    for env_id in sorted(set(env_ids)):
        extra = entry(env_id).extra
        if extra in catalog.OWN_VENV_EXTRAS and catalog.missing_extra(env_id) is not None:
            found[env_id] = extra
    return found


def variable(extra: str) -> str:
    """The environment variable naming the interpreter of ``extra``'s venv: ``RAGEN_BENCH_NETHACK_PYTHON``."""
    return f"RAGEN_BENCH_{extra.upper()}_PYTHON"


def interpreter(extra: str, env_ids: Sequence[str]) -> str:
    """The python of ``extra``'s venv, or one line saying how to build it (``env_ids`` need it)."""
    name = variable(extra)
    named = os.environ.get(name)
    if named:
        if not (os.path.isfile(named) and os.access(named, os.X_OK)):
            raise LeaderboardError(f"{name}={named} is not an executable file (the python of the '{extra}' "
                                   "extra's virtualenv is expected)")
        return named
    default = CHECKOUT / f".venv-{extra}" / "bin" / "python"
    if default.is_file():
        return str(default)
    ids = ", ".join(env_ids)
    raise LeaderboardError(f"replaying {ids} needs the '{extra}' extra, which lives in a virtualenv of its own and "
                           f"is not installed here: build it with `bash {catalog.OWN_VENV_EXTRAS[extra]} --no-test` "
                           f"in {CHECKOUT} (or name its python in {name})")


def run_worker(python: str, header: Mapping[str, Any], lines: Sequence[str], *, what: str) -> list[Any]:
    """What ``python``'s worker (:mod:`.own_venv_worker`) answers to ``lines`` (one JSON object each), one
    JSON value a line, in order.

    ``header`` names the ``task`` and what it needs; the fingerprint of these sources is added.
    ``what`` names the work in an error ("the replay").
    """
    text = "\n".join([json.dumps({**header, "fingerprint": fingerprint()}), *lines]) + "\n"
    done = subprocess.run([python, "-I", "-m", WORKER], input=text, capture_output=True, text=True,
                          encoding="utf-8", check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
        raise LeaderboardError(f"{what} in {python} failed (exit status {done.returncode}): {last}")
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    if len(answers) != len(lines):
        raise LeaderboardError(f"{what} in {python} gave {len(answers)} answers for {len(lines)} records")
    return answers


def replay_elsewhere(python: str, config: Mapping[str, Any],
                     items: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> list[dict[str, Any] | None]:
    """The verdicts of ``python``'s worker on ``items`` (``(where, record)``, replayed under the run
    ``config``), in order: ``None`` for a record that matches its replay, else the refusal's fields."""
    verdicts: list[dict[str, Any] | None] = [None] * len(items)
    sent, lines = [], []
    for index, (where, record) in enumerate(items):
        try:
            lines.append(json.dumps({"where": dict(where), "record": record}))
            sent.append(index)
        except RecursionError:  # what the replay here says of a value nested too deeply to compare
            verdicts[index] = {"problem": "a value is nested too deeply", "where": dict(where)}
    for index, verdict in zip(sent, run_worker(python, {"task": "replay", "config": dict(config)}, lines,
                                                what="the replay")):
        verdicts[index] = verdict
    return verdicts


def raise_verdict(verdict: Mapping[str, Any] | None) -> None:
    """Raise a worker's refusal as the :class:`LeaderboardError` the replay here would have raised."""
    if verdict is not None:
        raise LeaderboardError(verdict["problem"], **verdict["where"])


def fingerprint() -> str:
    """A hash of this install's ``ragen_bench`` sources: equal on both sides of the worker's pipe."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()
