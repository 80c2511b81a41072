"""`vhd export --format trl|skyrl|hf` (trainer-ready datasets) and `vhd serve-openenv` (the catalog as an OpenEnv
server); the integrations themselves live in `integrations/`."""

from __future__ import annotations

import os
import sys

from cli.evaluate import parse_modes
from cli.shared import warehouse_of
from schemas.errors import UserError


def cmd_export_trainer(args, wh) -> int:
    from cli.export import check_export_out
    from envs.catalog import select_specs
    from integrations.rows import trainer_rows, write_trainer_rows

    out = os.path.expanduser(args.out)
    check_export_out(args, args.format)  # a path the format can take, not a file already there without --force
    modes = parse_modes(args.mode)
    specs = select_specs(args.where, args.limit, wh, args.seed)  # --limit: a seeded sample, stratified by family
    rows = trainer_rows(specs, args.format, modes, sample_seed=args.seed if args.limit is not None else None)
    path = write_trainer_rows(rows, out, args.format)
    shape = ("a dataset folder: configuration 'default' with every family, one per family, splits from the rows' "
             "split" if args.format == "hf" else "Parquet" if str(path).endswith(".parquet") else "JSON lines")
    if args.limit is not None:
        shape += f"; a sample drawn with --seed {args.seed}"
    print(f"wrote {len(rows)} row(s) ({len(specs)} environment(s) x {len(modes)} mode(s)) to {path} for "
          f"{args.format} ({shape})")
    return 0


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
          f"WebSocket sessions on /ws, at most {args.max_sessions}; Task API under /vhdplay/); Ctrl-C stops",
          file=sys.stderr)
    serve(wh, host=args.host, port=args.port, max_sessions=args.max_sessions, tasks=tasks)
    return 0
