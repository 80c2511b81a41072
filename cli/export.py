"""`vhd export`: selected environments, one row per environment and mode, as JSON lines or Parquet, or as trainer-ready
datasets (`--format trl|skyrl|hf`, integrations/rows.py)."""

from __future__ import annotations

import contextlib
import os

from cli.evaluate import parse_modes
from cli.shared import warehouse_of
from schemas.errors import UserError, exhausted

# The file suffixes each format writes (the trainer formats write Parquet for .parquet, else JSON lines); hf
# writes a folder, which takes no suffix. A suffix is compared exactly, as the writers compare it.
SUFFIXES = {"jsonl": (".jsonl",), "parquet": (".parquet",), "trl": (".parquet", ".jsonl"),
            "skyrl": (".parquet", ".jsonl")}


def export_format(fmt: str | None, out: str) -> str:
    """The format an export writes: --format, else the one --out's suffix names; UserError (one line, naming the
    suffixes it accepts) for an --out whose suffix does not match, so that no .csv holds JSON lines."""
    if fmt is None:
        fmt = next((name for name in ("jsonl", "parquet") if str(out).endswith(SUFFIXES[name][0])), None)
        if fmt is None:
            raise UserError(f"--out {out} names no export format: end it in .jsonl or .parquet, or give --format "
                            "(trl, skyrl: .parquet or .jsonl; hf: a folder)")
        return fmt
    suffixes = SUFFIXES.get(fmt)
    if suffixes is not None and not str(out).endswith(suffixes):
        raise UserError(f"--out {out} does not match --format {fmt}: a {fmt} file ends in {' or '.join(suffixes)}")
    return fmt


def check_export_out(args, fmt: str | None) -> str:
    """The format of the export (`fmt`, else the one --out's suffix names), once --out can take its file: a path the
    writer can write (warehouse.preflight), whose suffix matches the format, and that is not a file already there
    unless --force replaces it (hf: a folder, refused when not empty by its writer). UserError, one line, before
    anything is selected or rendered."""
    from warehouse.preflight import check_output_file

    out = os.path.expanduser(args.out)
    if fmt == "hf":
        if os.path.isdir(out):
            if os.listdir(out):
                raise UserError(f"--out {args.out} is a folder that is not empty; the hf format writes a new "
                                "dataset folder")
        else:
            check_output_file(out)
        return fmt
    check_output_file(out)  # a folder or /proc is named as such, before its suffix
    fmt = export_format(fmt, args.out)
    if os.path.lexists(out) and not args.force:
        raise UserError(f"--out {args.out} exists; pass --force to replace it, or give another path")
    return fmt


@contextlib.contextmanager
def _written_whole(out: str):
    """A full disk, a file-size limit or memory running out while writing the export is one line naming --out
    (cli.main prints it, exit code 1); the writers have removed what they wrote (they write beside and rename)."""
    try:
        yield
    except (OSError, MemoryError) as error:
        found = exhausted(error, f"writing the export to {out}", "nothing was written (no partial file or folder)")
        if found is None or found is error:
            raise
        raise found from error


def cmd_export(args) -> int:
    from envs.catalog import check_predicate
    from integrations.rows import TRAINER_FORMATS

    wh = warehouse_of(args)
    parse_modes(args.mode)
    check_predicate(args.where)
    # the format asked for (argparse offers the export and trainer formats), else the one --out's suffix names
    fmt = check_export_out(args, args.format)  # before anything is selected or rendered
    if fmt in TRAINER_FORMATS:  # trainer-ready datasets (integrations.rows)
        return cmd_export_trainer(args, wh)
    from envs.catalog import select_specs
    from envs.export import export_rows, write_rows

    modes = parse_modes(args.mode)
    specs = select_specs(args.where, args.limit, wh, args.seed)  # --limit: a seeded sample, stratified by family
    if not specs:
        raise UserError(f"no environment matches --where {args.where!r}: nothing to export; widen --where")
    rows = export_rows(specs, modes)
    with _written_whole(args.out):
        path = write_rows(rows, args.out, fmt)
    print(f"wrote {len(rows)} row(s) ({len(specs)} environment(s) x {len(modes)} mode(s)) to {path} as {fmt}")
    return 0


def cmd_export_trainer(args, wh) -> int:
    from envs.catalog import select_specs
    from integrations.rows import trainer_rows, write_trainer_rows

    out = os.path.expanduser(args.out)
    check_export_out(args, args.format)  # a path the format can take, not a file already there without --force
    modes = parse_modes(args.mode)
    specs = select_specs(args.where, args.limit, wh, args.seed)  # --limit: a seeded sample, stratified by family
    rows = trainer_rows(specs, args.format, modes, sample_seed=args.seed if args.limit is not None else None)
    with _written_whole(args.out):
        path = write_trainer_rows(rows, out, args.format)
    shape = ("a dataset folder: configuration 'default' with every family, one per family, splits from the rows' "
             "split" if args.format == "hf" else "Parquet" if str(path).endswith(".parquet") else "JSON lines")
    if args.limit is not None:
        shape += f"; a sample drawn with --seed {args.seed}"
    print(f"wrote {len(rows)} row(s) ({len(specs)} environment(s) x {len(modes)} mode(s)) to {path} for "
          f"{args.format} ({shape})")
    return 0
