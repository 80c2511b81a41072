"""`vhd serve-envs` (HTTP sessions for remote rollouts) and `vhd serve-mcp` (one environment over MCP stdio)."""

from __future__ import annotations

import sys

from cli.shared import warehouse_of
from schemas.errors import UserError


def cmd_serve_envs(args) -> int:
    from serving.http import serve

    if not 0 < args.port < 65536:
        raise UserError(f"--port must be 1-65535, got {args.port}")
    if not args.session_ttl > 0:
        raise UserError(f"--session-ttl must be positive seconds, got {args.session_ttl}")
    from envs.catalog import selected_count

    wh = warehouse_of(args)
    count = selected_count(args.where, wh)  # a bad --where fails here, with one line
    scope = "" if args.where == "true" else f" ({count} selected by --where)"
    print(f"serving the environments of {wh.url}{scope} on http://{args.host}:{args.port} (sessions expire after "
          f"{args.session_ttl:g} s idle; API docs at /docs); Ctrl-C stops", file=sys.stderr)
    serve(wh, host=args.host, port=args.port, ttl_s=args.session_ttl, where=args.where, max_sessions=args.max_sessions,
          per_client=args.sessions_per_client, body_timeout_s=args.body_timeout)
    return 0


def cmd_serve_mcp(args) -> int:
    import anyio

    from envs.catalog import load_env
    from serving.mcp_server import serve_stdio

    env = load_env(args.env_id, args.mode, warehouse_of(args))  # an unknown id: one line, before stdio opens
    anyio.run(serve_stdio, env)
    return 0
