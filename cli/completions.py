"""`vhd score TRANSCRIPT (--env-id ID | --row FILE)`: one finished chat's tool calls replayed against its environment
(integrations.completions); prints the score, u, turns and each failed call's error as JSON."""

from __future__ import annotations

import os
from typing import Any

from cli.shared import warehouse_of
from schemas.errors import UserError


def cmd_score(args) -> int:
    """The warehouse is read (and checked) only when the environment comes from it (--env-id without --row)."""
    from integrations.completions import messages_of, read_json, score_completion
    from schemas.strict_json import dumps

    messages = messages_of(read_json(os.path.expanduser(args.transcript), "transcript"))
    if args.row is not None:
        env_row: Any = _row(args)
    else:
        if args.env_id is None:
            raise UserError("name the environment: --env-id ID (from the warehouse) or --row FILE (an exported row)")
        from envs.catalog import load_spec
        from schemas.envspec import DEFAULT_MODE

        env_row = {"spec_json": load_spec(args.env_id, warehouse_of(args)).model_dump_json(),
                   "mode": args.mode or DEFAULT_MODE}
    result = score_completion(env_row, messages)
    print(dumps(result.as_dict(), indent=1))
    return 0


def _row(args) -> dict[str, Any]:
    """The one row of --row that --env-id and --mode select (a file of one row needs neither)."""
    from integrations.completions import read_json
    from integrations.rows import read_trainer_rows

    path = os.path.expanduser(args.row)
    if not os.path.exists(path):
        raise UserError(f"no row file at {args.row}; write one with vhd export --format trl|skyrl|hf|jsonl")
    if path.endswith(".json"):
        document = read_json(path, "row file")
        rows = document if isinstance(document, list) else [document]
    else:
        try:
            rows = read_trainer_rows(path)
        except (OSError, ValueError, RecursionError) as error:
            reason = " ".join(str(error).split())[:200] or type(error).__name__
            raise UserError(f"row file {args.row} cannot be read as .parquet, JSON lines or an hf folder "
                            f"({reason})") from None
    rows = [row for row in rows if isinstance(row, dict)]
    chosen = [row for row in rows if (args.env_id is None or _field(row, "env_id") == args.env_id)
              and (args.mode is None or _field(row, "mode") == args.mode)]
    if len(chosen) == 1:
        return chosen[0]
    wanted = " and ".join(f"{name} {value}" for name, value in (("env_id", args.env_id), ("mode", args.mode))
                          if value is not None)
    if not chosen:
        raise UserError(f"no row of {args.row} has {wanted}" if wanted else f"{args.row} holds no row")
    raise UserError(f"{len(chosen)} rows of {args.row}{' have ' + wanted if wanted else ''}; pick one with "
                    "--env-id and --mode")


def _field(row: dict[str, Any], name: str) -> Any:
    """A column of a trl / hf / jsonl row, or of a skyrl row's extra_info."""
    if name in row:
        return row[name]
    extra = row.get("extra_info")
    return extra.get(name) if isinstance(extra, dict) else None
