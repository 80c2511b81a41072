"""What the parser (cli.main) and the command handlers share: the choice values the parser adds to a registry's, and
each command's warehouse, checked before any work. It imports no other module of cli/, so every one of them can
import it; bad input is raised as schemas.errors.UserError, which cli.main prints as one line."""

from __future__ import annotations

import os

HUMAN = "human"  # `vhd play --agent human`: the person at the terminal types the calls
EVAL_REPORT = "eval"  # `vhd report eval`: the evaluation report (evaluation.reports), beside the warehouse's reports

_CHECKED: dict[tuple, object] = {}  # (location, $VHD_WAREHOUSE, cwd, read, write) -> the warehouse that passed them


def warehouse_of(args, read: bool = True, write: bool = False):
    """The warehouse of --warehouse / $VHD_WAREHOUSE / ./vhd_warehouse, checked before any work starts (one line
    when it is missing, unreadable or not writable: warehouse.preflight); a check already passed is not repeated."""
    from warehouse.location import ENV_LOCATION, resolve_warehouse
    from warehouse.preflight import check_readable, check_writable

    key = (args.warehouse, os.environ.get(ENV_LOCATION), os.getcwd(), read, write)
    if key not in _CHECKED:
        wh = resolve_warehouse(args.warehouse)
        if read:
            check_readable(wh)
        if write:
            check_writable(wh)
        _CHECKED[key] = wh
    return _CHECKED[key]
