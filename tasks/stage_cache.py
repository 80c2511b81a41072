"""The stage cache on disk: what a run's stages persisted so that a re-run of the same night resumes where it stopped
(tasks.common.ShardStagePolicy), kept $VHD_STAGE_CACHE_DAYS (default 3) and then removed when a generate run starts
(flows.generate.run_generate_state: `vhd generate`, the nightly).

A 3,300-environment run persists about 230 MB of stage results, and nothing else ever removes them: a nightly job
would fill the disk. The cache is for a night run again (an interrupted run finished, a failed shard retried); a
night's committed shards are skipped through the warehouse's commit markers, not through the cache, and nobody
re-runs a night from weeks ago without expecting to compute it again. Only this project's records go, recognised by
their content (is_stage_record: a Prefect result record written with StageResultSerializer whose storage key is the
file itself), never by their name alone: a `vhd-notes.txt` of yours in that folder stays. And only from Prefect's
local result storage: results kept in a storage block of your own are yours to expire.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from schemas.errors import UserError

ENV_DAYS = "VHD_STAGE_CACHE_DAYS"
DEFAULT_DAYS = 3.0
RECORD_PREFIX = "vhd-"  # ShardStagePolicy's keys, which Prefect uses as the records' file names
RECORD_SERIALIZER = "vhd-stage-pickle"  # tasks.common.StageResultSerializer's type, in every record's metadata
RECORD_HEAD = b'{"metadata":'  # how Prefect writes a result record: its metadata first, then the result
HEAD_BYTES = 64 * 1024  # the metadata is a few hundred bytes (its storage key a path); the result follows it


def stage_cache_days() -> float:
    """How many days a stage's persisted result is kept ($VHD_STAGE_CACHE_DAYS, default 3); UserError in one line
    when that is not a number of days (0 keeps nothing from an earlier run)."""
    raw = os.environ.get(ENV_DAYS, "").strip()
    if not raw:
        return DEFAULT_DAYS
    try:
        days = float(raw)
    except ValueError:
        days = -1.0
    if not 0 <= days < float("inf"):
        raise UserError(f"{ENV_DAYS} must be a number of days, 0 or more (e.g. 3), got {raw!r}")
    return days


def stage_cache_dir() -> Path | None:
    """Where Prefect keeps this process's persisted results on disk, or None when they go to a storage block."""
    from prefect.settings import get_current_settings

    results = get_current_settings().results
    return None if results.default_storage_block else Path(results.local_storage_path).expanduser()


def is_stage_record(path: str | os.PathLike[str]) -> bool:
    """Whether the file at `path` is a stage result this project persisted: a Prefect result record (JSON whose
    metadata comes first) written with StageResultSerializer, whose storage key names this very file. Only the head
    of the file is read; anything else (a file of yours, a record of another task, an unreadable file) is not ours."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
    except OSError:
        return False
    if not head.startswith(RECORD_HEAD):
        return False
    try:  # the head may end inside the result (a multi-byte character cut): only the metadata is decoded
        metadata, _ = json.JSONDecoder().raw_decode(head[len(RECORD_HEAD):].decode("utf-8", errors="replace"))
    except ValueError:
        return False
    if not isinstance(metadata, dict):
        return False
    serializer = metadata.get("serializer")
    key = metadata.get("storage_key")
    return (isinstance(serializer, dict) and serializer.get("type") == RECORD_SERIALIZER
            and isinstance(key, str) and Path(key).name == Path(path).name)


def prune_stage_cache(directory: Path | None = None, days: float | None = None, now: float | None = None) -> int:
    """Remove the stage results older than `days` (default stage_cache_days()) from `directory` (default
    stage_cache_dir()); returns how many went. Only this project's records (is_stage_record) are candidates, whatever
    a file is named; a record that cannot be removed (gone already, not ours to delete) is left for the next run."""
    directory = stage_cache_dir() if directory is None else directory
    if directory is None or not directory.is_dir():
        return 0
    oldest = (time.time() if now is None else now) - 86400.0 * (stage_cache_days() if days is None else days)
    removed = 0
    with os.scandir(directory) as entries:
        for entry in entries:
            if not entry.name.startswith(RECORD_PREFIX):
                continue
            try:
                if (entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < oldest
                        and is_stage_record(entry.path)):
                    os.unlink(entry.path)
                    removed += 1
            except OSError:
                continue
    return removed

