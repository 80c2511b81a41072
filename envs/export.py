"""The shape RL trainers load: one row per environment and mode with its system prompt, tools and env id.

Each row also carries the full spec as JSON, so `env_from_row(row)` rebuilds the playable environment without
the catalog.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from envs.environment import Environment
from schemas.envspec import MODES, EnvSpec
from schemas.errors import UserError

EXPORT_FORMATS = ("jsonl", "parquet")
COLUMNS = ("env_id", "mode", "family", "split", "size", "horizon", "turn_budget", "system_prompt", "tools_json",
           "spec_json")


def export_row(env: Environment) -> dict[str, Any]:
    """One environment in one mode as a flat, JSON-serialisable row."""
    spec = env.spec
    return {"env_id": spec.env_id, "mode": env.mode, "family": spec.family, "split": spec.split, "size": spec.size,
            "horizon": spec.horizon, "turn_budget": spec.turn_budget, "system_prompt": env.instructions,
            "tools_json": json.dumps(env.tools(), sort_keys=True), "spec_json": spec.model_dump_json()}


def export_rows(specs: Iterable[EnvSpec], modes: Iterable[str] = MODES) -> list[dict[str, Any]]:
    modes = list(modes)
    return [export_row(Environment(spec, mode)) for spec in specs for mode in modes]


def env_from_row(row: dict[str, Any]) -> Environment:
    """The Environment an exported row describes (its spec and mode)."""
    return Environment(EnvSpec.model_validate_json(row["spec_json"]), row["mode"])


def write_rows(rows: list[dict[str, Any]], path: str | Path, fmt: str) -> Path:
    """Write rows as JSON lines or Parquet (written beside and renamed, so a reader never sees half a file)."""
    if fmt not in EXPORT_FORMATS:
        raise UserError(f"unknown export format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        if fmt == "jsonl":
            with open(temporary, "w") as handle:
                for row in rows:
                    handle.write(json.dumps(row) + "\n")
        else:
            import pyarrow
            import pyarrow.parquet as pq

            columns = {name: [row[name] for row in rows] for name in COLUMNS}
            pq.write_table(pyarrow.table(columns), temporary, compression="zstd")
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)  # a failed export leaves nothing behind
        raise
    return path


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of an export file (.jsonl or .parquet)."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]
