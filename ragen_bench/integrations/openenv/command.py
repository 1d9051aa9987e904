"""``ragen-bench serve``'s arguments and handler.

The server itself is imported when it runs: :mod:`.server` (OpenEnv), or with ``--mcp``
:mod:`ragen_bench.integrations.mcp_server` (MCP tools over the same sessions).
"""

from __future__ import annotations

import argparse

from ragen_bench.envs.base import MissingExtra


def add_serve(commands: argparse._SubParsersAction) -> None:
    """Add the ``serve`` subcommand to ``ragen-bench``'s parser."""
    server = commands.add_parser(
        "serve", help="serve ids or suites over OpenEnv (HTTP + WebSocket) for any trainer or agent",
        epilog="Needs the openenv extra (--mcp: the mcp extra). Guide: docs/serve.md in the source repository",
    )
    server.add_argument("names", nargs="+", metavar="ID|SUITE", help="env ids or suite names; a client picks one at reset")
    server.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    server.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    server.add_argument("--max-sessions", type=int, default=64, help="concurrent sessions at most (default 64)")
    server.add_argument("--idle-timeout", type=float, default=600.0,
                        help="close a session silent this many seconds (default 600; 0: never)")
    server.add_argument("--mcp", action="store_true",
                        help="serve MCP tools (reset, step, state, close, list_envs) on http://HOST:PORT/mcp instead")
    server.add_argument("--stdio", action="store_true", help="with --mcp: speak MCP on stdin/stdout, no port")
    server.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    if args.stdio and not args.mcp:
        raise ValueError("--stdio serves MCP: add --mcp")
    if args.mcp:
        return _serve_mcp(args)
    try:
        from ragen_bench.integrations.openenv.server import serve
    except ImportError as error:
        raise MissingExtra(f"serve needs the openenv extra: pip install 'ragen-bench[openenv]' ({error})") from None
    serve(args.names, host=args.host, port=args.port, max_sessions=args.max_sessions,
          idle_timeout_s=args.idle_timeout or None)
    return 0


def _serve_mcp(args: argparse.Namespace) -> int:
    try:
        from ragen_bench.integrations.mcp_server import serve_mcp
    except ImportError as error:
        raise MissingExtra(f"serve --mcp needs the mcp extra: pip install 'ragen-bench[mcp]' ({error})") from None
    serve_mcp(args.names, stdio=args.stdio, host=args.host, port=args.port, max_sessions=args.max_sessions,
              idle_timeout_s=args.idle_timeout or None)
    return 0
