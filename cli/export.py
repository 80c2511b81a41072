"""`vhd export`: selected environments, one row per environment and mode, as JSON lines or Parquet."""

from __future__ import annotations

from cli.evaluate import parse_modes
from cli.shared import warehouse_of


def cmd_export(args) -> int:
    from integrations.rows import TRAINER_FORMATS

    wh = warehouse_of(args)
    if args.format in TRAINER_FORMATS:  # trainer-ready datasets (integrations.rows)
        from cli.integrations import cmd_export_trainer

        return cmd_export_trainer(args, wh)
    from envs.catalog import select_specs
    from envs.export import EXPORT_FORMATS, export_rows, write_rows
    from warehouse.preflight import check_output_file

    check_output_file(args.out)  # before anything is selected or rendered
    # the format asked for (argparse offers the export and trainer formats), else the one --out's suffix names
    fmt = args.format or next((f for f in EXPORT_FORMATS if str(args.out).endswith(f".{f}")), EXPORT_FORMATS[0])
    modes = parse_modes(args.mode)
    specs = select_specs(args.where, args.limit, wh, args.seed)  # --limit: a seeded sample, stratified by family
    if not specs:
        from schemas.errors import UserError

        raise UserError(f"no environment matches --where {args.where!r}: nothing to export; widen --where")
    rows = export_rows(specs, modes)
    path = write_rows(rows, args.out, fmt)
    print(f"wrote {len(rows)} row(s) ({len(specs)} environment(s) x {len(modes)} mode(s)) to {path} as {fmt}")
    return 0
