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

The cache can also live in shared storage (`vhd generate --stage-cache s3://bucket/prefix`, or $VHD_STAGE_CACHE for
the nightly and deployments): an fsspec URL, a local folder, or a Prefect storage block (TYPE/NAME) becomes the
generate flow's result storage, which its stage tasks inherit (Prefect takes a flow's storage for the tasks that
name none) and which travels with the flow's context to Dask workers. A re-run in another process or on another host
that names the same location then takes the finished stages from there (the stages' cache keys name the shard,
round and warehouse, never the host). Such a location is pruned the same way at the start of a run, through fsspec
(`prune_stage_cache(url)`), still only of this project's records.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemas.errors import UserError

ENV_DAYS = "VHD_STAGE_CACHE_DAYS"
DEFAULT_DAYS = 3.0
RECORD_PREFIX = "vhd-"  # ShardStagePolicy's keys, which Prefect uses as the records' file names
RECORD_SERIALIZER = "vhd-stage-pickle"  # tasks.common.StageResultSerializer's type, in every record's metadata
RECORD_HEAD = b'{"metadata":'  # how Prefect writes a result record: its metadata first, then the result
HEAD_BYTES = 64 * 1024  # the metadata is a few hundred bytes (its storage key a path); the result follows it
ENV_LOCATION = "VHD_STAGE_CACHE"  # where the stage results are kept when `vhd generate --stage-cache` is not given
OPTION = "--stage-cache"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://(.*)$", re.DOTALL)
_BUCKET = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]*$")
_BLOCK_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")  # a Prefect block's TYPE/NAME


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
    return is_stage_head(head, Path(path).name)


def is_stage_head(head: bytes, name: str) -> bool:
    """Whether `head`, the first bytes of the file or object called `name`, begins one of this project's stage
    records (see is_stage_record)."""
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
            and isinstance(key, str) and Path(key).name == name)


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



# --- a stage cache in shared storage ---------------------------------------------------------------------------

@dataclass(frozen=True)
class StageCacheLocation:
    """Where the stage results are kept when not in Prefect's local result storage: a local `folder` (absolute), an
    fsspec `url` (s3://bucket/prefix, gs://..., no trailing slash), or a Prefect storage `block` (TYPE/NAME, e.g.
    remote-file-system/vhd-cache); `named_by` is how the user gave it (--stage-cache or $VHD_STAGE_CACHE)."""

    kind: str
    where: str
    named_by: str

    def refused(self, reason: str) -> UserError:
        return UserError(f"{self.named_by} {self.where}: {reason}")


def stage_cache_location(given: str | None = None) -> StageCacheLocation | None:
    """The stage cache's location: `given` (--stage-cache), else $VHD_STAGE_CACHE, else None (Prefect's local result
    storage). Only its form is checked here (check_stage_cache reaches it); a malformed one is a UserError in one
    line naming the option."""
    named_by = OPTION
    if given is None:
        given, named_by = os.environ.get(ENV_LOCATION), f"${ENV_LOCATION}"
        if given is None or not given.strip():
            return None
    if not isinstance(given, str) or not given.strip():
        raise UserError(f"{named_by} is empty; give s3://BUCKET/PREFIX, a folder, or a Prefect storage block's "
                        "TYPE/NAME")
    text = given.strip()
    if any(char in text for char in "\x00\n\r"):
        raise UserError(f"{named_by} {given!r} contains a NUL or newline; give a plain s3:// URL or folder")
    scheme = _SCHEME.match(text)
    if scheme is not None:
        return _url_location(scheme.group(1).lower(), scheme.group(2), given, named_by)
    if text.startswith(("/", "~", ".")):
        return StageCacheLocation("folder", os.path.abspath(os.path.expanduser(text)), named_by)
    if _BLOCK_SLUG.match(text):
        return StageCacheLocation("block", text, named_by)
    raise UserError(f"{named_by} {given!r} is not a location; give s3://BUCKET/PREFIX (or another fsspec URL), an "
                    "absolute or ./relative folder, or a Prefect storage block's TYPE/NAME")


def _url_location(scheme: str, rest: str, given: str, named_by: str) -> StageCacheLocation:
    if scheme == "file":
        if not rest.startswith("/"):
            raise UserError(f"{named_by} {given!r} is not an absolute file:// URL; use file:///ABS/PATH")
        return StageCacheLocation("folder", os.path.abspath(rest), named_by)
    parts = [part for part in rest.split("/") if part]
    if any(part in (".", "..") for part in parts):
        raise UserError(f"{named_by} {given!r} contains '.' or '..'; give a plain {scheme}://BUCKET/PREFIX")
    if scheme in ("s3", "s3a"):
        if not parts or rest.startswith("/") or not _BUCKET.match(parts[0]):
            raise UserError(f"{named_by} {given!r} names no valid bucket; use s3://BUCKET/PREFIX")
        return StageCacheLocation("url", "s3://" + "/".join(parts), named_by)
    import fsspec

    try:
        fsspec.get_filesystem_class(scheme)
    except ValueError:
        raise UserError(f"{named_by} {given!r} uses unknown scheme {scheme!r}; use s3://BUCKET/PREFIX, another "
                        "fsspec URL, or a folder") from None
    except ImportError as error:
        raise UserError(f"{named_by} {given!r} needs a package for {scheme}:// that is not installed "
                        f"({' '.join(str(error).split())[:200]})") from None
    if not parts:
        raise UserError(f"{named_by} {given!r} names no place; use {scheme}://BUCKET/PREFIX")
    return StageCacheLocation("url", f"{scheme}://" + "/".join(parts), named_by)


def check_stage_cache(given: str | None = None) -> StageCacheLocation | None:
    """The stage cache's location once it is known to be usable: a folder that is not a file and whose nearest
    existing folder this user may write; an S3 prefix whose bucket answers a listing with the credentials and
    endpoint the warehouse uses (VHD_S3_ENDPOINT_URL, AWS_*). Other URLs and blocks are tried when the run starts
    (open_stage_cache). UserError in one line naming the option otherwise; nothing is created."""
    location = stage_cache_location(given)
    if location is None:
        return None
    if location.kind == "folder":
        path = Path(location.where)
        if path.exists() and not path.is_dir():
            raise location.refused("is a file, not a folder; give a folder or s3://BUCKET/PREFIX")
        existing = next(folder for folder in (path, *path.parents) if folder.exists())
        if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
            raise location.refused(f"cannot be written ({existing} is read-only for this user); give another folder")
    elif location.where.startswith("s3://"):
        from warehouse.location import WarehouseError, resolve_warehouse
        from warehouse.preflight import check_writable

        try:
            check_writable(resolve_warehouse(location.where))  # one listing of the prefix, as for a warehouse
        except WarehouseError as error:
            raise location.refused(str(error)) from None
    return location


def _fsspec_settings(url: str) -> dict[str, Any]:
    """What the fsspec filesystem of `url` is built with: for S3 the warehouse's endpoint (VHD_S3_ENDPOINT_URL or
    AWS_ENDPOINT_URL; credentials stay in each host's own environment, never in a block on the server)."""
    if not url.startswith("s3://"):
        return {}
    from warehouse.location import ENV_S3_ENDPOINTS

    endpoint = next((os.environ[name] for name in ENV_S3_ENDPOINTS if os.environ.get(name)), None)
    return {"client_kwargs": {"endpoint_url": endpoint}} if endpoint else {}


def stage_cache_block_name(url: str, settings: dict[str, Any]) -> str:
    """The name of the storage block saved for `url` (Prefect takes only saved blocks as a flow's result storage):
    one per location and endpoint, so that runs naming the same place share it."""
    digest = hashlib.sha256(json.dumps([url, settings], sort_keys=True).encode()).hexdigest()[:16]
    return f"vhd-stage-cache-{digest}"


def stage_cache_storage(location: StageCacheLocation):
    """What the flow takes as its result storage for `location`: a Path (a local folder), a RemoteFileSystem block
    saved on the Prefect server (an fsspec URL), or the named storage block loaded from it; UserError when a block
    is missing or is not a storage Prefect can write results to."""
    if location.kind == "folder":
        return Path(location.where)
    from prefect.blocks.core import Block
    from prefect.filesystems import RemoteFileSystem, WritableFileSystem

    if location.kind == "url":
        settings = _fsspec_settings(location.where)
        block = RemoteFileSystem(basepath=location.where, settings=settings)
        block.save(stage_cache_block_name(location.where, settings), overwrite=True)
        return block
    try:
        block = Block.load(location.where)
    except (ValueError, KeyError):
        raise location.refused("no such block on the Prefect server; create it (e.g. RemoteFileSystem(basepath="
                               "'s3://bucket/prefix').save(NAME)) or give s3://BUCKET/PREFIX") from None
    if not isinstance(block, WritableFileSystem):
        raise location.refused(f"is a {type(block).__name__} block, not a file system results can be written to")
    return block


def _prunable(storage) -> Path | tuple[Any, str] | None:
    """Where a stage cache's storage can be pruned: a local folder, an (fsspec filesystem, root path), or None."""
    from prefect.filesystems import LocalFileSystem, RemoteFileSystem

    if isinstance(storage, Path):
        return storage
    if isinstance(storage, LocalFileSystem):
        return Path(storage.basepath).expanduser() if storage.basepath else None
    if isinstance(storage, RemoteFileSystem):
        fs = storage.filesystem
        return fs, fs._strip_protocol(storage.basepath)
    return None  # another kind of storage block: its owner expires it


def open_stage_cache(given: str | None = None) -> dict[str, Any]:
    """Prepare the stage cache for a generate run and return the flow options that put it in place.

    Prefect's local result storage is pruned as always (prune_stage_cache). With a location (`given`, else
    $VHD_STAGE_CACHE) the flow gets it as its result storage, which the stage tasks inherit, and it is pruned too;
    the flow's own result and the landing and commit tasks' stay unpersisted, as without one."""
    prune_stage_cache()
    location = check_stage_cache(given)
    if location is None:
        return {}
    from prefect.settings import get_current_settings

    storage = stage_cache_storage(location)
    prunable = _prunable(storage)
    if isinstance(prunable, Path):
        prune_stage_cache(prunable)
    elif prunable is not None:
        prune_remote_stage_cache(*prunable)
    return {"result_storage": storage, "persist_result": get_current_settings().results.persist_by_default}


def _modified(fs, entry: dict[str, Any]) -> float | None:
    """An object's modification time (seconds since the epoch) from its listing entry, else asked of `fs`."""
    stamp = entry.get("LastModified", entry.get("mtime", entry.get("last_modified", entry.get("updated"))))
    if stamp is None:
        try:
            stamp = fs.modified(entry["name"])
        except (NotImplementedError, OSError, ValueError):
            return None
    if hasattr(stamp, "timestamp"):
        return stamp.timestamp()
    try:
        return float(stamp)
    except (TypeError, ValueError):
        return None


def prune_remote_stage_cache(fs, root: str, days: float | None = None, now: float | None = None) -> int:
    """prune_stage_cache for a stage cache behind an fsspec filesystem (`root`: its path there, without protocol):
    the records older than `days` directly under `root` that are this project's (is_stage_head on the first
    HEAD_BYTES of each, read by range) are removed; returns how many went. A record that cannot be read or removed
    is left for the next run; a root that does not exist yet holds nothing to prune. A bucket's own lifecycle rule
    may expire them as well."""
    oldest = (time.time() if now is None else now) - 86400.0 * (stage_cache_days() if days is None else days)
    try:
        entries = fs.ls(root, detail=True)
    except FileNotFoundError:
        return 0
    removed = 0
    for entry in entries:
        name = entry.get("name", "")
        base = name.rstrip("/").rsplit("/", 1)[-1]
        if entry.get("type") != "file" or not base.startswith(RECORD_PREFIX):
            continue
        modified = _modified(fs, entry)
        if modified is None or modified >= oldest:
            continue
        try:
            if is_stage_head(fs.cat_file(name, start=0, end=HEAD_BYTES), base):
                fs.rm_file(name)
                removed += 1
        except Exception:  # noqa: BLE001 - a denied or vanished object is never a reason to fail the run
            continue
    return removed
