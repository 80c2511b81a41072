"""The catalog's state index: what every query of one warehouse state would otherwise recompute.

A *state* is the set of visible files of every table with each file's size and modification stamp (mtime
locally, ETag on S3), so any landing, compaction, deletion or damage to a file is a new state. For a state the
index records

- the damaged files (``warehouse.visibility.damaged_files``: unreadable, missing, foreign columns), and
- the files written before columns were added to their table, with the columns each lacks (``lacking``), so the
  views read the other files without reconciling schemas, and the old names of renamed columns such a file holds
  (``renamed``: environments.difficulty, read as tier), and
- the *shadowed rows* of tables whose key must be unique (``environments.env_id``): two overlapping runs can land
  one environment twice, and the catalog keeps its first landing (earliest ``created_at``, then run id, date,
  file and row), so every later copy is shadowed, named by (file, row number).

The visible files themselves come from the commit markers; their listing is cached too, under the names and
stamps of the markers (``markers-<digest>.json``), so a query lists the markers instead of reading every one.

Building the index reads every file's footer and the key column once (about a third of a second at a million
rows); a query of a state that has an index reads one small JSON file instead, and a view over files without
shadowed rows is a plain scan. The index is written under ``_index/`` in the warehouse by whoever first needs it
(a committing run warms it for the next readers); a reader that may not write there computes it anyway and goes
on. The index is a cache: deleting ``_index/`` changes no answer.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import duckdb

from schemas.columns import TABLES
from warehouse.location import Warehouse

INDEX_DIR = "_index"
INDEX_VERSION = 3  # 3: `renamed` (environments.difficulty read as tier)
KEPT_INDEXES = 16  # older states' indexes are pruned when a new one is written
# table -> (its unique key, the order that picks the landing kept when the key repeats)
UNIQUE_KEYS = {"environments": ("env_id", 'created_at, run_id, "date", filename, file_row_number')}


@dataclass
class StateIndex:
    """What the views of one warehouse state need: damaged files and shadowed rows, by table."""

    key: str
    damaged: dict[str, dict[str, str]] = field(default_factory=dict)  # table -> {relative path: reason}
    shadowed: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # table -> {relative path: [rows]}
    lacking: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # table -> {relative path: [columns]}
    renamed: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # table -> {relative path: [old names]}

    def to_json(self) -> bytes:
        return json.dumps({"version": INDEX_VERSION, "key": self.key, "damaged": self.damaged,
                           "shadowed": self.shadowed, "lacking": self.lacking, "renamed": self.renamed},
                          sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes, key: str) -> StateIndex | None:
        """The index stored for `key`, or None if the bytes are not one (a stale or damaged cache entry)."""
        try:
            raw = json.loads(data)
            if raw.get("version") != INDEX_VERSION or raw.get("key") != key:
                return None
            damaged = {str(t): {str(p): str(r) for p, r in files.items()} for t, files in raw["damaged"].items()}
            shadowed = {str(t): {str(p): [int(r) for r in rows] for p, rows in files.items()}
                        for t, files in raw["shadowed"].items()}
            lacking, renamed = (_columns_by_file(raw["lacking"]), _columns_by_file(raw["renamed"]))
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        return cls(key=key, damaged=damaged, shadowed=shadowed, lacking=lacking, renamed=renamed)


def _columns_by_file(raw: dict) -> dict[str, dict[str, list[str]]]:
    """table -> {relative path: [column names]} as stored in an index."""
    return {str(t): {str(p): [str(c) for c in columns] for p, columns in files.items()} for t, files in raw.items()}


def files_on_disk(wh: Warehouse) -> dict[str, dict[str, str]]:
    """Every file under each table's folder: table -> {relative path: stamp (size and mtime or ETag)}."""
    found: dict[str, dict[str, str]] = {}
    for table in TABLES:
        try:
            infos = wh.fs.find(wh.path(table), detail=True)
        except FileNotFoundError:
            infos = {}
        found[table] = {
            wh.strip(path)[len(wh.root) + 1 :]: _stamp(info) for path, info in infos.items()
            if info.get("type", "file") == "file"
        }
    return found


def _stamp(info: dict) -> str:
    """What changes when a file is rewritten: its size and its modification time (locally) or ETag (S3)."""
    return f"{info.get('size')}:{info.get('ETag') or info.get('mtime')}"


def state_key(files: dict[str, list[str]], on_disk: dict[str, dict[str, str]]) -> str:
    """The key of a state: its visible files with their stamps ("missing" for a listed file that is gone)."""
    entries = [[table, path, on_disk.get(table, {}).get(path, "missing")]
               for table in sorted(files) for path in files[table]]
    return hashlib.sha256(json.dumps([INDEX_VERSION, entries]).encode()).hexdigest()[:32]


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def shadowed_rows(con: duckdb.DuckDBPyConnection, wh: Warehouse, table: str, paths: list[str]) -> dict[str, list[int]]:
    """The rows of `paths` that repeat the key of an earlier landing: {relative path: sorted row numbers}."""
    if table not in UNIQUE_KEYS or not paths:
        return {}
    key, order = UNIQUE_KEYS[table]
    by_url = {wh.url_of(wh.path(path)): path for path in paths}
    urls = ", ".join(_literal(url) for url in by_url)
    source = (f"read_parquet([{urls}], filename=true, file_row_number=true, hive_partitioning=true, "
              "union_by_name=true, hive_types={'date': DATE})")
    keys = f"read_parquet([{urls}], hive_partitioning=false, union_by_name=true)"
    rows = con.execute(
        f'SELECT filename, file_row_number FROM (SELECT filename, file_row_number, row_number() OVER '
        f'(PARTITION BY "{key}" ORDER BY {order}) AS landing FROM {source} WHERE "{key}" IN '
        f'(SELECT "{key}" FROM {keys} GROUP BY 1 HAVING count(*) > 1)) WHERE landing > 1 ORDER BY ALL'
    ).fetchall()
    shadowed: dict[str, list[int]] = {}
    for url, row in rows:
        shadowed.setdefault(by_url[url], []).append(int(row))
    return shadowed


def _index_path(wh: Warehouse, kind: str, key: str) -> str:
    return wh.path(f"{INDEX_DIR}/{kind}-{key}.json")


def _read(wh: Warehouse, key: str) -> StateIndex | None:
    try:
        return StateIndex.from_json(wh.fs.cat_file(_index_path(wh, "state", key)), key)
    except (OSError, ValueError):  # absent, unreadable or not allowed: build it
        return None


def _store(wh: Warehouse, kind: str, key: str, data: bytes) -> None:
    """Write one cache entry (atomically) and prune the oldest of its kind; a read-only warehouse is left alone."""
    from warehouse.commits import write_atomically

    try:
        write_atomically(wh, _index_path(wh, kind, key), data)
        stored = {path: info for path, info in wh.fs.find(wh.path(INDEX_DIR), detail=True).items()
                  if path.rsplit("/", 1)[-1].startswith(f"{kind}-")}
        by_age = sorted(stored, key=lambda path: str(stored[path].get("LastModified") or stored[path].get("mtime")))
        for path in by_age[:-KEPT_INDEXES]:
            wh.fs.rm(path)
    except (OSError, ValueError):  # read-only credentials, a full disk, a racing pruner: the cache is optional
        return


def visible_files_cached(wh: Warehouse) -> dict[str, list[str]]:
    """The visible files of every table (as ``visibility.visible_files``), read from the markers' cached listing.

    The listing is keyed by every marker's name and stamp, so a new, rewritten or removed marker is a new key; a
    bad marker is never cached (``visible_files`` raises its one-line error).
    """
    from warehouse.commits import COMMITS_DIR
    from warehouse.visibility import visible_files

    wh.fs.invalidate_cache()
    try:
        markers = wh.fs.glob(wh.path(f"{COMMITS_DIR}/date=*/*.json"), detail=True)
    except FileNotFoundError:
        markers = {}
    if not markers:
        return visible_files(wh, {})
    stamps = sorted([wh.strip(path)[len(wh.root) + 1 :], _stamp(info)] for path, info in markers.items())
    key = hashlib.sha256(json.dumps([INDEX_VERSION, stamps]).encode()).hexdigest()[:32]
    try:
        raw = json.loads(wh.fs.cat_file(_index_path(wh, "markers", key)))
        if raw.get("key") == key:
            return {table: [str(path) for path in raw["files"].get(table, [])] for table in TABLES}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):  # absent or unreadable: read the markers
        pass
    files = visible_files(wh)
    _store(wh, "markers", key, json.dumps({"key": key, "files": files}, sort_keys=True).encode())
    return files


def current_state(wh: Warehouse, files: dict[str, list[str]]) -> tuple[str, dict[str, dict[str, str]]]:
    """The key of the state made of `files` (table -> visible relative paths) and the files found on disk."""
    on_disk = files_on_disk(wh)
    return state_key(files, on_disk), on_disk


def state_index(wh: Warehouse, files: dict[str, list[str]], con: duckdb.DuckDBPyConnection,
                state: tuple[str, dict[str, dict[str, str]]] | None = None) -> StateIndex:
    """The index of the state made of `files` (table -> visible relative paths): stored, or built and stored.

    `state` is ``current_state(wh, files)`` when the caller has it already.
    """
    from warehouse.visibility import inspect_files

    key, on_disk = state or current_state(wh, files)
    index = _read(wh, key)
    if index is not None:
        return index
    damaged, lacking, renamed = inspect_files(wh, files, con,
                                              present={t: set(paths) for t, paths in on_disk.items()})
    shadowed = {table: rows for table in UNIQUE_KEYS if table not in damaged
                if (rows := shadowed_rows(con, wh, table, files.get(table, [])))}
    index = StateIndex(key=key, damaged=damaged, shadowed=shadowed, lacking=lacking, renamed=renamed)
    if any(files.values()):  # an empty warehouse has nothing to remember (and a query must not create it)
        _store(wh, "state", key, index.to_json())
    return index


def warm(wh: Warehouse) -> StateIndex:
    """Build (or read) the index of the warehouse's current state: a committing run calls it for its readers."""
    con = duckdb.connect(":memory:")
    try:
        if not wh.is_local:
            con.register_filesystem(wh.fs)
        return state_index(wh, visible_files_cached(wh), con)
    finally:
        con.close()

