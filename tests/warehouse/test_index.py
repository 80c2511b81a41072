"""The catalog's caches: the state index and the markers' listing change no answer, and follow every change."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pyarrow
import pyarrow.parquet as pq
import pytest

from schemas.columns import arrow_schema
from tests.warehouse.test_landing import DATE, NOW, environments_frame
from warehouse.catalog import QueryError, run_query
from warehouse.index import INDEX_DIR
from warehouse.landing import commit_run, land
from warehouse.location import resolve_warehouse

COUNT = "SELECT count(*) AS n, count(DISTINCT env_id) AS ids FROM environments"


@pytest.fixture
def wh(tmp_path):
    wh = resolve_warehouse(str(tmp_path / "wh"))
    a = land(wh, "environments", environments_frame(["e1", "e2"], "run-a"), DATE, "a1")
    b = land(wh, "environments", environments_frame(["e2", "e3"], "run-b", NOW + pd.Timedelta(seconds=1)), DATE, "b1")
    commit_run(wh, "run-a", DATE, {"environments": [a]}, {})
    commit_run(wh, "run-b", DATE, {"environments": [b]}, {})
    return wh


def _answer(wh):
    return run_query(wh, "SELECT env_id, run_id FROM environments ORDER BY env_id").to_pylist()


def test_the_caches_are_written_and_deleting_or_corrupting_them_changes_no_answer(wh):
    first = _answer(wh)
    assert first == [{"env_id": "e1", "run_id": "run-a"}, {"env_id": "e2", "run_id": "run-a"},
                     {"env_id": "e3", "run_id": "run-b"}]  # e2's first landing is kept
    cached = sorted(p.name.split("-")[0] for p in Path(wh.path(INDEX_DIR)).iterdir())
    assert cached == ["markers", "state"]
    for entry in Path(wh.path(INDEX_DIR)).iterdir():
        entry.write_text('{"key": "not this one", "files": {"environments": ["environments/x.parquet"]}}')
    assert _answer(wh) == first
    for entry in Path(wh.path(INDEX_DIR)).iterdir():
        entry.write_bytes(b"\x00garbage")
    assert _answer(wh) == first
    for entry in Path(wh.path(INDEX_DIR)).iterdir():
        entry.unlink()
    assert _answer(wh) == first


def test_a_new_commit_is_seen_by_the_next_query_of_the_same_process(wh):
    assert run_query(wh, COUNT).to_pylist() == [{"n": 3, "ids": 3}]
    c = land(wh, "environments", environments_frame(["e4"], "run-c"), DATE, "c1")
    assert run_query(wh, COUNT).to_pylist() == [{"n": 3, "ids": 3}]  # landed, not committed: invisible
    commit_run(wh, "run-c", DATE, {"environments": [c]}, {})
    assert run_query(wh, COUNT).to_pylist() == [{"n": 4, "ids": 4}]


def test_a_file_damaged_after_a_query_is_named_by_the_next_one(wh):
    assert run_query(wh, COUNT).to_pylist() == [{"n": 3, "ids": 3}]
    victim = next(Path(wh.path(f"environments/date={DATE}")).glob("part-b1.parquet"))
    victim.write_bytes(victim.read_bytes()[:100])
    with pytest.raises(QueryError, match="part-b1.parquet"):
        run_query(wh, COUNT)


def test_concurrent_queries_of_one_state_agree(wh):
    expected = _answer(wh)
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda _: _answer(wh), range(64)))
    assert all(answer == expected for answer in answers)


def _file_without(wh, name: str, env_ids: list[str], dropped: set[str]) -> str:
    schema = pyarrow.schema([f for f in arrow_schema("environments") if f.name not in dropped])
    frame = environments_frame(env_ids).drop(columns=sorted(dropped))
    path = wh.path(f"environments/date={DATE}/part-{name}.parquet")
    pq.write_table(pyarrow.Table.from_pandas(frame, schema=schema, preserve_index=False), path)
    return path


def test_files_lacking_different_columns_read_together(tmp_path):
    wh = resolve_warehouse(str(tmp_path / "wh"))
    full = land(wh, "environments", environments_frame(["f1"]).assign(online_u=1.0, online_score=0.1), DATE, "f")
    Path(full).parent.mkdir(parents=True, exist_ok=True)
    no_group = _file_without(wh, "old-a", ["a1"], {"family_group"})
    no_online = _file_without(wh, "old-b", ["b1"], {"online_u", "online_score"})
    commit_run(wh, "run", DATE, {"environments": [full, no_group, no_online]}, {})
    rows = run_query(wh, "SELECT env_id, family_group, online_u FROM environments ORDER BY env_id").to_pylist()
    assert rows == [{"env_id": "a1", "family_group": None, "online_u": None},
                    {"env_id": "b1", "family_group": "trained", "online_u": None},
                    {"env_id": "f1", "family_group": "trained", "online_u": 1.0}]


def test_columns_derived_for_older_files_equal_the_landed_ones_and_compaction_writes_them(tmp_path):
    from tests.support import make_spec
    from warehouse.maintenance import compact
    from warehouse.visibility import visible_files

    wh = resolve_warehouse(str(tmp_path / "wh"))
    specs = [make_spec(family, i) for i, family in enumerate(["knapsack", "routing", "lp", "qp", "negotiation"])]

    def frame(chosen):
        return environments_frame([s.env_id for s in chosen]).assign(
            spec_json=[s.canonical_json() for s in chosen],
            tool_interface=[s.rendering.tool_interface() for s in chosen],
            story=[s.rendering.story() for s in chosen])

    landed = land(wh, "environments", frame(specs[:2]), DATE, "new")
    old = wh.path(f"environments/date={DATE}/part-old.parquet")
    schema = pyarrow.schema([f for f in arrow_schema("environments") if f.name not in ("tool_interface", "story")])
    older = frame(specs[2:]).drop(columns=["tool_interface", "story"])
    older.loc[len(older)] = {**older.iloc[0].to_dict(), "env_id": "qp-broken", "spec_json": "not json"}
    pq.write_table(pyarrow.Table.from_pandas(older, schema=schema, preserve_index=False), old)
    commit_run(wh, "run-new", DATE, {"environments": [landed]}, {})
    commit_run(wh, "run-old", DATE, {"environments": [old]}, {})

    expected = sorted([{"env_id": s.env_id, "tool_interface": s.rendering.tool_interface(),
                        "story": s.rendering.story()} for s in specs]
                      + [{"env_id": "qp-broken", "tool_interface": None, "story": None}], key=lambda r: r["env_id"])
    sql = "SELECT env_id, tool_interface, story FROM environments ORDER BY env_id"
    assert run_query(wh, sql).to_pylist() == expected
    assert len({r["tool_interface"] for r in expected if r["tool_interface"]}) == 5
    assert compact(wh)
    (merged,) = visible_files(wh)["environments"]
    assert "tool_interface" in pq.read_schema(wh.path(merged)).names
    assert run_query(wh, sql).to_pylist() == expected  # written by compaction in Python, read as they are


def test_a_query_in_flight_survives_newer_states_and_the_old_database_closes_after_it(wh):
    import duckdb

    from warehouse import catalog

    old = catalog._state_catalog(wh)
    with old.cursor({"environments"}) as con:
        for key in ("c", "d", "e"):  # each commit is a new state; only the newest two are kept
            path = land(wh, "environments", environments_frame([f"e-{key}"], f"run-{key}"), DATE, key)
            commit_run(wh, f"run-{key}", DATE, {"environments": [path]}, {})
            assert run_query(wh, COUNT).to_pylist()[0]["n"] == {"c": 4, "d": 5, "e": 6}[key]
        assert old.retired
        assert con.execute("SELECT count(*) FROM environments").fetchall() == [(3,)]  # its own state, still open
    with pytest.raises(duckdb.Error):
        old.con.execute("SELECT 1")  # closed once its last query finished
