"""The worker of :mod:`.own_venv`: ``python -I -m ragen_bench.leaderboard.own_venv_worker``, run by the
python of the venv an extra lives in (``.venv-nethack``).

stdin: a header line -- ``task``, what the task needs, and the caller's ``fingerprint`` -- then one
JSON object a line; stdout: one JSON value a line, answering each in order.  Tasks:

* ``replay`` (``leaderboard verify``): header ``config`` (the run's eval config); items ``{"where",
  "record"}``; answer ``null`` when the record matches its replay (:func:`.own_venv.replay_checked`),
  else ``{"problem", "where"}``, the refusal's :meth:`~.errors.LeaderboardError.keywords`.
* ``frames`` (the page's viewer): header ``chat`` (the run's chat settings) and ``env_kwargs``; items
  ``{"record"}``; answer :func:`.viewer.drawn_episode`.

It stops with :data:`.own_venv.OTHER_CODE` before reading a record when its sources are not the
caller's: an answer of another version would pass for this one's.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from ragen_bench.leaderboard import own_venv
from ragen_bench.leaderboard.errors import LeaderboardError


def _replay(header: Mapping[str, Any], items: Iterator[dict[str, Any]]) -> Iterator[Any]:
    from ragen_bench.eval.config import load
    from ragen_bench.eval.run import EnvPool

    run = load(header["config"])
    pool = EnvPool({})
    try:
        for item in items:
            record = item["record"]
            try:
                own_venv.replay_checked(record, pool.take([record["env_id"]])[0], run.chat_for(record["env_id"]),
                                        where=item["where"])
                yield None
            except LeaderboardError as error:
                yield {"problem": error.problem, "where": error.keywords()}
    finally:
        pool.close()


def _frames(header: Mapping[str, Any], items: Iterator[dict[str, Any]]) -> Iterator[Any]:
    from ragen_bench.chat.config import check_chat
    from ragen_bench.leaderboard.viewer import drawn_episode
    from ragen_bench.render import replay_env

    config = check_chat(header["chat"])
    envs: dict[str, Any] = {}
    try:
        for item in items:
            record = item["record"]
            if record["env_id"] not in envs:
                envs[record["env_id"]] = replay_env(record["env_id"], header["env_kwargs"])
            yield drawn_episode(record, config, envs[record["env_id"]])
    finally:
        for env in envs.values():
            env.close()


TASKS = {"replay": _replay, "frames": _frames}


def main() -> int:
    header = json.loads(sys.stdin.readline())
    if header["fingerprint"] != own_venv.fingerprint():
        print(f"{sys.executable} runs ragen_bench from {own_venv.PACKAGE}, whose sources differ from the caller's; "
              "install the caller's checkout there (pip install -e CHECKOUT --no-deps)", file=sys.stderr)
        return own_venv.OTHER_CODE
    for answer in TASKS[header["task"]](header, (json.loads(line) for line in sys.stdin)):
        # default=repr: a value JSON cannot hold still gives a line (its text is what a message shows).
        print(json.dumps(answer, default=repr), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
