"""The ASGI app of ``openenv.yaml``: what ``ragen-bench serve`` serves, for ASGI servers and OpenEnv's tools.

It serves the ids or suites named in ``$RAGEN_BENCH_SERVE`` (comma-separated; default
:data:`DEFAULT_NAMES`) with ``serve``'s defaults.  Under your own ASGI server, give it the WebSocket
message bound ``serve`` sets (uvicorn: ``--ws-max-size 1048576``).
"""

from __future__ import annotations

import os

from ragen_bench.integrations.openenv.server import build_app

DEFAULT_NAMES = "RAGEN/Sokoban-6x6-v0"

app = build_app([name for name in os.environ.get("RAGEN_BENCH_SERVE", DEFAULT_NAMES).split(",") if name])
