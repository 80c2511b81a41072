"""Landing: validation, atomic deterministic shard files, commit markers and warehouse locations."""

from __future__ import annotations

import json
import os

import pandas as pd
import pyarrow.parquet as pq
import pytest

from schemas.envspec import tool_interface_of
from warehouse.landing import commit_run, committed_files, committed_shards, land, shard_file, validate
from warehouse.location import WarehouseError, resolve_warehouse

DATE = "2025-03-01"
NOW = pd.Timestamp("2025-03-01 02:00:00", tz="UTC")


def environments_frame(
    env_ids: list[str], run_id: str = "run-a", created_at: pd.Timestamp = NOW
) -> pd.DataFrame:
    """A valid environments frame with one row per env id."""
    n = len(env_ids)
    return pd.DataFrame(
        {
            "env_id": env_ids,
            "family": "inventory_dp",
            "family_group": "trained",
            "version": 1,
            "split": "train",
            "modes": "written,hidden",
            "size": 3,
            "horizon": 4,
            "domain": "retail",
            "passage_id": "p-1",
            "title": "Shop",
            "setter": "template",
            "model": [None] * n,
            "tool_count": 12,
            "turn_budget": 30,
            "u_star": 10.0,
            "u0": 2.0,
            "u_idle": 0.0,
            "online_u": [None] * n,
            "online_score": [None] * n,
            "tier": "medium",
            "informed_score": 1.0,
            "heuristic_score": 0.8,
            "naive_score": 0.5,
            "skill_gap": 0.5,
            "facts_fit": 1.0,
            "attempts": 1,
            "llm_cost_usd": [None] * n,
            "compute_seconds": 0.5,
            "cost_usd": [None] * n,
            "params_hash": "h",
            "tool_interface": tool_interface_of(["probe_demand", "order"]),
            "story": "A shop sells umbrellas.",
            "spec_json": "{}",
            "shard_key": "s1",
            "run_id": run_id,
            "created_at": created_at,
        }
    )


def llm_calls_frame(n: int = 2, **overrides: object) -> pd.DataFrame:
    """A valid llm_calls frame: a priced call and an unknown-cost call."""
    rest = max(n - 1, 0)
    frame = pd.DataFrame(
        {
            "call_id": [f"c{i}" for i in range(n)],
            "run_id": "run-a",
            "shard_key": "s1",
            "instance_key": "i1",
            "attempt": [1] * n,
            "stage": "render",
            "model": "gemma",
            "prompt_tokens": ([100] + [None] * rest)[:n],
            "completion_tokens": ([20] + [None] * rest)[:n],
            "cost_usd": ([0.002] + [None] * rest)[:n],
            "cost_source": (["provider"] + ["unknown"] * rest)[:n],
            "latency_s": 1.5,
            "cache_hit": False,
            "error": [None] * n,
            "created_at": NOW,
        }
    )
    return frame.assign(**overrides)


@pytest.fixture
def wh(tmp_path):
    """A fresh local warehouse (its directory does not exist yet)."""
    return resolve_warehouse(str(tmp_path / "wh"))


def test_resolve_local_is_lazy_and_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VHD_WAREHOUSE", raising=False)
    default = resolve_warehouse()
    assert default.root == str(tmp_path / "vhd_warehouse") and default.protocol == "file"
    assert not (tmp_path / "vhd_warehouse").exists()
    relative = resolve_warehouse("data/wh/")
    assert relative.root == str(tmp_path / "data" / "wh") and relative.url == relative.root
    assert resolve_warehouse(f"file://{tmp_path}/x").root == str(tmp_path / "x")


def test_resolve_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("VHD_WAREHOUSE", str(tmp_path / "from-env"))
    assert resolve_warehouse().root == str(tmp_path / "from-env")
    assert resolve_warehouse(str(tmp_path / "explicit")).root == str(tmp_path / "explicit")


def test_resolve_s3_and_endpoint(monkeypatch):
    monkeypatch.setenv("VHD_S3_ENDPOINT_URL", "http://127.0.0.1:9")
    wh = resolve_warehouse("s3://bucket/some/prefix/")
    assert (wh.root, wh.url, wh.protocol) == ("bucket/some/prefix", "s3://bucket/some/prefix", "s3")
    assert wh.fs.client_kwargs["endpoint_url"] == "http://127.0.0.1:9"


@pytest.mark.parametrize(
    "location",
    [
        "",
        "   ",
        "ftp://x",
        "http://example.com/wh",
        "s3://",
        "s3:///prefix",
        "bad\x00path",
        "two\nlines",
        "s3://b/x\ny",
    ],
)
def test_malformed_location_raises_one_line(location):
    with pytest.raises(WarehouseError) as caught:
        resolve_warehouse(location)
    message = str(caught.value)
    assert message and "\n" not in message


def test_existing_file_is_not_a_warehouse(tmp_path):
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(WarehouseError, match="existing file"):
        resolve_warehouse(str(tmp_path / "file.txt"))


def test_shard_file_is_deterministic(wh):
    path = shard_file(wh, "attempts", DATE, "inventory_dp-0007")
    assert path == f"{wh.root}/attempts/date={DATE}/part-inventory_dp-0007.parquet"
    assert path == shard_file(wh, "attempts", DATE, "inventory_dp-0007")


@pytest.mark.parametrize("key", ["a/b", "../x", "sp ace", "", "..", "é"])
def test_unsafe_shard_key_refused(wh, key):
    with pytest.raises(WarehouseError):
        shard_file(wh, "attempts", DATE, key)


@pytest.mark.parametrize("date", ["2025-3-1", "20250301", "2025-02-30", "yesterday", "2025-03-01/.."])
def test_bad_date_refused(wh, date):
    with pytest.raises(WarehouseError):
        land(wh, "llm_calls", llm_calls_frame(), date, "s1")


def test_land_writes_typed_parquet_atomically(wh):
    path = land(wh, "llm_calls", llm_calls_frame(3), DATE, "s1")
    assert path == shard_file(wh, "llm_calls", DATE, "s1")
    table = pq.read_table(path)
    assert table.num_rows == 3
    assert str(table.schema.field("prompt_tokens").type) == "int64"
    assert str(table.schema.field("created_at").type) == "timestamp[ns, tz=UTC]"
    assert table.column("cost_usd").to_pylist() == [0.002, None, None]
    assert os.listdir(os.path.dirname(path)) == ["part-s1.parquet"]  # no temporary left beside it


def test_all_null_and_empty_columns_keep_types(wh):
    empty = land(wh, "llm_calls", llm_calls_frame(0), DATE, "empty")
    nulls = land(wh, "environments", environments_frame(["e1"]), DATE, "nulls")
    assert pq.read_table(empty).num_rows == 0
    assert str(pq.read_table(empty).schema.field("cost_usd").type) == "double"
    schema = pq.read_table(nulls).schema
    assert [str(schema.field(name).type) for name in ("model", "llm_cost_usd")] == ["string", "double"]


def test_retried_shard_overwrites(wh):
    land(wh, "llm_calls", llm_calls_frame(3), DATE, "s1")
    path = land(wh, "llm_calls", llm_calls_frame(2), DATE, "s1")
    assert pq.read_table(path).num_rows == 2
    assert os.listdir(os.path.dirname(path)) == ["part-s1.parquet"]


@pytest.mark.parametrize(
    ("table", "frame", "needle"),
    [
        ("environments", environments_frame(["e1"]).assign(tool_count=3), "tool_count"),
        ("environments", environments_frame(["e1", "e1"]), "env_id"),
        ("llm_calls", llm_calls_frame(cost_source=["provider", "guess"]), "cost_source"),
        ("llm_calls", llm_calls_frame(cost_usd=[0.1, 0.2]), "cost_usd must be null"),
        ("llm_calls", llm_calls_frame(cache_hit=[True, None]), "cache_hit"),
        ("llm_calls", llm_calls_frame(created_at=pd.Timestamp("2025-03-01")), "timezone-naive"),
        ("llm_calls", llm_calls_frame(date=DATE), "date"),
        ("llm_calls", llm_calls_frame().drop(columns="model"), "model"),
        ("attempts", pd.DataFrame({"attempt_id": ["a"]}), "missing columns"),
    ],
)
def test_invalid_frame_is_refused_and_not_written(wh, table, frame, needle):
    with pytest.raises(WarehouseError) as caught:
        land(wh, table, frame, DATE, "bad")
    message = str(caught.value)
    assert needle in message and table in message and "\n" not in message
    assert not wh.fs.exists(wh.root)


def test_validate_coerces_and_keeps_unknown_cost_null():
    frame = validate("llm_calls", llm_calls_frame(2, attempt=["1", "2"]))
    assert frame["attempt"].tolist() == [1, 2]
    assert frame["cost_usd"].isna().tolist() == [False, True]


def test_unknown_table_refused(wh):
    with pytest.raises(WarehouseError, match="unknown table"):
        land(wh, "evaluationz", llm_calls_frame(), DATE, "s1")


def test_uncommitted_files_are_invisible(wh):
    land(wh, "llm_calls", llm_calls_frame(), DATE, "s1")
    assert committed_files(wh, "llm_calls") == []
    assert committed_shards(wh, DATE) == set()


def test_commit_marker_lists_relative_files(wh):
    calls = land(wh, "llm_calls", llm_calls_frame(), DATE, "s1")
    envs = land(wh, "environments", environments_frame(["e1"]), DATE, "s2")
    land(wh, "environments", environments_frame(["e9"]), DATE, "never-committed")
    marker = commit_run(
        wh, "run-a", DATE, {"llm_calls": [calls], "environments": [envs, envs]}, {"admitted": 1}
    )
    assert marker == f"{wh.root}/_commits/date={DATE}/run-a.json"
    content = json.loads(open(marker).read())
    assert content["files"] == {
        "environments": [f"environments/date={DATE}/part-s2.parquet"],
        "llm_calls": [f"llm_calls/date={DATE}/part-s1.parquet"],
    }
    assert content["summary"] == {"admitted": 1} and content["run_id"] == "run-a"
    assert committed_shards(wh, DATE) == {"s1", "s2"}
    assert committed_shards(wh, "2025-03-02") == set()
    assert committed_files(wh, "environments") == [envs]
    assert committed_files(wh, "attempts") == []


def test_committed_files_across_runs_and_dates_are_deduplicated(wh):
    first = land(wh, "environments", environments_frame(["e1"]), DATE, "s1")
    second = land(wh, "environments", environments_frame(["e2"]), "2025-03-02", "s1")
    commit_run(wh, "run-a", DATE, {"environments": [first]}, {})
    commit_run(wh, "run-b", DATE, {"environments": [first]}, {})
    commit_run(wh, "run-c", "2025-03-02", {"environments": [second]}, {})
    assert committed_files(wh, "environments") == [first, second]
    os.remove(second)
    assert committed_files(wh, "environments") == [first]


def test_commit_refuses_foreign_or_missing_files(wh, tmp_path):
    with pytest.raises(WarehouseError, match="does not exist"):
        commit_run(wh, "run-a", DATE, {"llm_calls": [shard_file(wh, "llm_calls", DATE, "s1")]}, {})
    with pytest.raises(WarehouseError, match="not a landed"):
        commit_run(wh, "run-a", DATE, {"llm_calls": [str(tmp_path / "elsewhere.parquet")]}, {})
    path = land(wh, "llm_calls", llm_calls_frame(), DATE, "s1")
    with pytest.raises(WarehouseError, match="not a landed"):
        commit_run(wh, "run-a", DATE, {"attempts": [path]}, {})
    with pytest.raises(WarehouseError):
        commit_run(wh, "run/a", DATE, {"llm_calls": [path]}, {})
    assert committed_files(wh, "llm_calls") == []


def test_landed_environments_are_sorted_by_env_id_in_bounded_row_groups(tmp_path):
    from warehouse.commits import ROW_GROUP_ROWS

    wh = resolve_warehouse(str(tmp_path / "wh"))
    rows = ROW_GROUP_ROWS * 2 + 10
    ids = [f"{['knapsack', 'lp', 'qp'][i % 3]}-{i * 7919 % rows:08d}" for i in range(rows)]
    path = land(wh, "environments", environments_frame(ids), DATE, "big")
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 3 and max(meta.row_group(i).num_rows for i in range(3)) <= ROW_GROUP_ROWS
    written = pq.read_table(path, columns=["env_id"]).column("env_id").to_pylist()
    assert written == sorted(ids)
    # each row group covers one stretch of ids: a filter on a family or an id skips the others
    stats = [meta.row_group(i).column(0).statistics for i in range(3)]
    assert all(a.max < b.min for a, b in zip(stats, stats[1:], strict=False))
