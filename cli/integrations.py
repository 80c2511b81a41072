"""`vhd serve-openenv` (the catalog as an OpenEnv server); the integrations themselves live in `integrations/`."""

from __future__ import annotations

import sys

from cli.evaluate import parse_modes
from cli.shared import warehouse_of
from schemas.errors import UserError


def cmd_serve_openenv(args) -> int:
    from integrations.openenv_server import serve

    if not 0 < args.port < 65536:
        raise UserError(f"--port must be 1-65535, got {args.port}")
    if not args.max_sessions >= 1:
        raise UserError(f"--max-sessions must be at least 1, got {args.max_sessions}")
    from integrations.openenv_server import TaskRows

    modes = parse_modes(args.mode)
    wh = warehouse_of(args)
    tasks = TaskRows.from_catalog(wh, args.where, modes)  # a bad --where fails here, with one line
    print(f"serving the environments of {wh.url} as OpenEnv environment 'vhdplay' on http://{args.host}:{args.port} "
          f"({sum(map(len, tasks.splits.values()))} task row(s) in split(s) {', '.join(tasks.splits) or 'none'}; "
          f"WebSocket sessions on /ws, at most {args.max_sessions}, {args.sessions_per_client} per client; "
          "Task API under /vhdplay/); Ctrl-C stops",
          file=sys.stderr)
    serve(wh, host=args.host, port=args.port, max_sessions=args.max_sessions, tasks=tasks,
          per_client=args.sessions_per_client)
    return 0
