"""Damaged files refuse with their name, `vhd warehouse check` lists every problem, compaction changes no result,
and files written before a column was added stay queryable."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow
import pyarrow.parquet as pq
import pytest

from schemas.envspec import EnvSpec
from schemas.tables import TABLES, arrow_schema
from tests.cli.test_cli import assert_one_line_error, vhd
from tests.warehouse.test_catalog import moto_endpoint, s3_wh  # noqa: F401, F811 - fixtures
from tests.warehouse.test_landing import DATE, environments_frame
from warehouse.catalog import QueryError, run_query
from warehouse.landing import commit_run, land
from warehouse.location import resolve_warehouse
from warehouse.maintenance import check, compact
from warehouse.reports import REPORTS
from warehouse.visibility import visible_files

DATES = ("2026-06-01", "2026-06-02")
SELECTIONS = [
    "SELECT env_id, family, split, size, horizon, u_star, u0, cost_usd, date FROM environments ORDER BY env_id",
    "SELECT env_id FROM environments WHERE family = 'knapsack' AND size >= 2 ORDER BY env_id",
    "SELECT attempt_id, instance_key, attempt, admitted, reason, env_id FROM attempts ORDER BY attempt_id",
    "SELECT run_id, run_date, requested, admitted, rejected, status FROM runs ORDER BY run_id",
    "SELECT family, count(*) AS n, sum(compute_seconds) AS s FROM environments GROUP BY ALL ORDER BY ALL",
    "SELECT count(*) AS n FROM llm_calls",
]


@pytest.fixture(scope="module")
def generated(prefect_server, tmp_path_factory):
    """A real catalog of many small files: two nights through the CLI, shards of 3 environments."""
    warehouse = tmp_path_factory.mktemp("maintenance") / "wh"
    for date in DATES:
        vhd("generate", "--count", "12", "--families", "inventory_dp,knapsack", "--date", date, "--shard-size", "3",
            "--warehouse", str(warehouse), "--no-progress", check=True)
    return warehouse


@pytest.fixture
def copy(generated, tmp_path):
    """A private copy of the generated warehouse, free to damage."""
    target = tmp_path / "wh"
    shutil.copytree(generated, target)
    return resolve_warehouse(str(target))


def _stable(value):
    """A value with floats to 12 significant digits: DuckDB's parallel double sums differ in the last bits even
    between two runs of one query over the same files, so exact float equality would test the scheduler."""
    return float(f"{value:.12g}") if isinstance(value, float) else value


def _results(wh) -> dict[str, list[dict]]:
    """Every report query and the selections above, by title."""
    queries = {title: sql for kind in REPORTS.values() for title, sql in kind}
    queries.update({f"selection {i}": sql for i, sql in enumerate(SELECTIONS)})
    return {title: [{k: _stable(v) for k, v in row.items()} for row in run_query(wh, sql).to_pylist()]
            for title, sql in queries.items()}


def _a_committed_file(wh, table: str) -> Path:
    return Path(wh.path(visible_files(wh)[table][0]))


def test_a_generated_catalog_has_no_problems(generated):
    result = vhd("warehouse", "check", "--warehouse", str(generated))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == f"no problems in {generated}" and not result.stderr


def test_compaction_changes_no_query_result(copy):
    before = _results(copy)
    assert len(before["selection 0"]) > 12  # two nights
    files_before = visible_files(copy)
    assert all(len(files_before[table]) > len(DATES) for table in ("environments", "attempts"))
    result = vhd("warehouse", "compact", "--warehouse", copy.url, check=True)
    assert "compacted" in result.stdout and not result.stderr
    files_after = visible_files(copy)
    for table in ("environments", "attempts", "runs"):
        assert len(files_after[table]) == len(DATES), files_after[table]
        assert all("part-compact-" in path for path in files_after[table]) or table == "runs"  # 1 run a night
    on_disk = sorted(p.relative_to(copy.root).as_posix() for p in Path(copy.root).glob("*/date=*/*.parquet"))
    assert on_disk == sorted(p for paths in files_after.values() for p in paths)  # old files removed
    assert _results(copy) == before
    assert check(copy) == []
    again = vhd("warehouse", "compact", "--warehouse", copy.url, check=True)
    assert again.stdout.strip() == f"nothing to compact in {copy.url}"
    # a re-run of a compacted night finds every shard finished and lands nothing new
    rerun = vhd("generate", "--count", "12", "--families", "inventory_dp,knapsack", "--date", DATES[0],
                "--shard-size", "3", "--warehouse", copy.url, "--no-progress", check=True)
    assert "(0 new)" in rerun.stdout
    after_rerun = _results(copy)
    assert after_rerun["selection 0"] == before["selection 0"]
    assert after_rerun["selection 2"] == before["selection 2"]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "missing", "foreign_schema"])
def test_a_damaged_file_refuses_queries_of_its_table_and_names_it(copy, damage):
    victim = _a_committed_file(copy, "environments")
    if damage == "garbage":
        victim.write_bytes(b"not parquet at all\n" * 50)
    elif damage == "truncated":
        victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    elif damage == "missing":
        victim.unlink()
    else:
        pq.write_table(pyarrow.table({"name": ["x"], "value": [1.0]}), victim)
    why = {"garbage": "unreadable", "truncated": "unreadable", "missing": "committed but missing",
           "foreign_schema": "schema mismatch"}[damage]
    with pytest.raises(QueryError, match=f"table environments has 1 damaged file.*{victim}.*{why}") as caught:
        run_query(copy, "SELECT count(*) FROM environments")
    assert "\n" not in str(caught.value)
    assert_one_line_error(vhd("query", "SELECT count(*) FROM environments", "--warehouse", copy.url),
                          str(victim), "vhd warehouse check")
    # the other tables still answer
    assert run_query(copy, "SELECT count(*) AS n FROM runs").column("n").to_pylist() == [len(DATES)]
    result = vhd("warehouse", "check", "--warehouse", copy.url)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"table environments: file {victim} is {why}" in result.stdout
    # compaction refuses, naming the file, and never hides it in a merged partition
    before = sorted(p.name for p in Path(copy.root).glob("*/date=*/*.parquet"))
    assert_one_line_error(vhd("warehouse", "compact", "--warehouse", copy.url), "compaction refused", str(victim), why)
    assert sorted(p.name for p in Path(copy.root).glob("*/date=*/*.parquet")) == before
    with pytest.raises(QueryError, match=str(victim)):
        run_query(copy, "SELECT count(*) FROM environments")


def test_check_lists_every_problem(copy):
    garbage = _a_committed_file(copy, "attempts")
    garbage.write_bytes(b"\x00" * 100)
    missing = _a_committed_file(copy, "runs")
    missing.unlink()
    unlisted = Path(copy.root) / "environments" / f"date={DATES[0]}" / "part-stray.parquet"
    shutil.copy(_a_committed_file(copy, "environments"), unlisted)
    bad_marker = Path(copy.root) / "_commits" / f"date={DATES[0]}" / "broken.json"
    bad_marker.write_text("{not json")
    result = vhd("warehouse", "check", "--warehouse", copy.url)
    assert result.returncode == 1 and not result.stderr
    lines = result.stdout.strip().splitlines()
    assert any(f"file {garbage} is unreadable" in line for line in lines)
    assert any(f"file {missing} is committed but missing" in line for line in lines)
    assert f"leftover: file {unlisted} is not listed by any commit marker (a landing that never committed)" in lines
    assert any(f"commit marker {bad_marker} is unreadable" in line for line in lines)
    assert lines[-1] == (f"{len(lines) - 2} problem(s) in {copy.url}; 1 leftover file(s) no query sees: "
                         "vhd warehouse clean removes those older than 24 h")


def test_check_reports_a_spec_edited_after_landing(copy):
    path = _a_committed_file(copy, "environments")
    table = pq.read_table(path)
    specs = table.column("spec_json").to_pylist()
    edited = json.loads(specs[0])
    edited["turn_budget"] += 1  # a quiet edit: the spec still parses, under the landed id
    specs[1] = "{not a spec"
    ids = table.column("env_id").to_pylist()
    pq.write_table(table.set_column(table.column_names.index("spec_json"), "spec_json",
                                    pyarrow.array([json.dumps(edited), *specs[1:]])), path)
    recomputed = EnvSpec.model_validate(edited).env_id
    lines = check(copy)
    assert f"table environments: env_id {ids[0]} holds a spec that hashes to {recomputed} (edited after landing); " \
           "fix: restore the file from its source, or land the run again" in lines
    assert any(line.startswith(f"table environments: env_id {ids[1]} holds a spec_json that does not parse")
               for line in lines)
    assert len(lines) == 2


def test_check_finds_duplicate_keys_across_files(tmp_path):
    wh = resolve_warehouse(str(tmp_path / "wh"))
    a = land(wh, "environments", environments_frame(["e1", "e2"], "run-a"), DATE, "a1")
    b = land(wh, "environments", environments_frame(["e2", "e3"], "run-b"), DATE, "b1")
    commit_run(wh, "run-a", DATE, {"environments": [a]}, {})
    commit_run(wh, "run-b", DATE, {"environments": [b]}, {})
    assert check(wh) == [f"table environments: env_id e2 is in 2 files ({a}, {b}); the view keeps its first landing"]
    assert run_query(wh, "SELECT count(*) AS n FROM environments").column("n").to_pylist() == [3]


def _old_environments_file(wh, env_ids: list[str]) -> str:
    """An environments file as written before family_group, online_u, online_score, tool_interface and story."""
    added = {"family_group", "online_u", "online_score", "tool_interface", "story"}
    schema = pyarrow.schema([f for f in arrow_schema("environments") if f.name not in added])
    frame = environments_frame(env_ids).drop(columns=sorted(added))
    path = wh.path(f"environments/date={DATE}/part-old.parquet")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pyarrow.Table.from_pandas(frame, schema=schema, preserve_index=False), path)
    return path


def test_files_written_before_a_column_was_added_stay_queryable(tmp_path):
    wh = resolve_warehouse(str(tmp_path / "wh"))
    old = _old_environments_file(wh, ["old1", "old2"])
    new = land(wh, "environments", environments_frame(["new1"]).assign(online_u=5.0, online_score=0.5), DATE, "s1")
    commit_run(wh, "run-old", DATE, {"environments": [old]}, {})
    commit_run(wh, "run-new", DATE, {"environments": [new]}, {})
    sql = "SELECT env_id, family, family_group, online_u, online_score, u_star FROM environments ORDER BY env_id"
    rows = run_query(wh, sql).to_pylist()
    assert rows == [
        {"env_id": "new1", "family": "inventory_dp", "family_group": "trained", "online_u": 5.0,
         "online_score": 0.5, "u_star": 10.0},
        {"env_id": "old1", "family": "inventory_dp", "family_group": None, "online_u": None, "online_score": None,
         "u_star": 10.0},
        {"env_id": "old2", "family": "inventory_dp", "family_group": None, "online_u": None, "online_score": None,
         "u_star": 10.0},
    ]
    assert check(wh) == []
    assert run_query(wh, "SELECT * FROM environments").schema == run_query(
        resolve_warehouse(str(tmp_path / "empty")), "SELECT * FROM environments").schema
    assert compact(wh) and run_query(wh, sql).to_pylist() == rows  # merged into the current schema
    merged = visible_files(wh)["environments"]
    assert len(merged) == 1 and pq.read_schema(wh.path(merged[0])).names == arrow_schema("environments").names


def _difficulty_era_file(wh, name: str, env_ids: list[str], tiers: list[str | None],
                         dropped: frozenset[str] = frozenset()) -> str:
    """An environments file as written before environments.difficulty was renamed tier (and before `dropped`)."""
    fields = [f.with_name("difficulty") if f.name == "tier" else f
              for f in arrow_schema("environments") if f.name not in dropped]
    frame = environments_frame(env_ids).assign(tier=tiers).drop(columns=sorted(dropped))
    path = wh.path(f"environments/date={DATE}/part-{name}.parquet")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pyarrow.Table.from_pandas(frame.rename(columns={"tier": "difficulty"}), schema=pyarrow.schema(
        fields), preserve_index=False), path)
    assert "difficulty" in pq.read_schema(path).names and "tier" not in pq.read_schema(path).names
    return path


def test_files_written_with_the_difficulty_column_read_as_tier(tmp_path):
    wh = resolve_warehouse(str(tmp_path / "wh"))
    old = _difficulty_era_file(wh, "old", ["old1", "old2"], ["hard", "frontier"])
    older = _difficulty_era_file(wh, "older", ["older1"], ["easy"], frozenset({"online_u", "online_score"}))
    commit_run(wh, "run-old", DATE, {"environments": [old, older]}, {})
    sql = "SELECT env_id, tier FROM environments ORDER BY env_id"
    old_rows = [{"env_id": "old1", "tier": "hard"}, {"env_id": "old2", "tier": "frontier"},
                {"env_id": "older1", "tier": "easy"}]
    assert run_query(wh, sql).to_pylist() == old_rows  # a warehouse written before the rename only
    assert check(wh) == []

    new = land(wh, "environments", environments_frame(["new1", "new2"]).assign(tier=["medium", None]), DATE, "s1")
    assert "tier" in pq.read_schema(new).names and "difficulty" not in pq.read_schema(new).names
    unmeasured = wh.path(f"environments/date={DATE}/part-unmeasured.parquet")  # before the column existed at all
    schema = pyarrow.schema([f for f in arrow_schema("environments") if f.name != "tier"])
    pq.write_table(pyarrow.Table.from_pandas(environments_frame(["pre1"]).drop(columns=["tier"]), schema=schema,
                                             preserve_index=False), unmeasured)
    commit_run(wh, "run-new", DATE, {"environments": [new, unmeasured]}, {})
    rows = sorted(old_rows + [{"env_id": "new1", "tier": "medium"}, {"env_id": "new2", "tier": None},
                              {"env_id": "pre1", "tier": None}], key=lambda r: r["env_id"])
    assert run_query(wh, sql).to_pylist() == rows
    assert run_query(wh, "SELECT env_id FROM environments WHERE tier IN ('hard', 'medium') ORDER BY 1").column(
        "env_id").to_pylist() == ["new1", "old1"]
    with pytest.raises(QueryError, match="difficulty"):  # the view has one name for the label
        run_query(wh, "SELECT difficulty FROM environments")
    result = vhd("warehouse", "check", "--warehouse", wh.url)
    assert result.returncode == 0 and result.stdout.strip() == f"no problems in {wh.url}", result.stdout
    assert compact(wh) and run_query(wh, sql).to_pylist() == rows  # rewritten under the current name
    (merged,) = visible_files(wh)["environments"]
    assert pq.read_schema(wh.path(merged)).names == arrow_schema("environments").names


def test_a_later_listing_of_a_compacted_path_stays_visible(tmp_path):
    wh = resolve_warehouse(str(tmp_path / "wh"))
    for key in ("s1", "s2"):
        commit_run(wh, f"run-{key}", DATE, {"environments": [land(wh, "environments", environments_frame(
            [f"e-{key}"]), DATE, key)]}, {})
    compact(wh)
    assert [p.rsplit("/", 1)[1][:13] for p in visible_files(wh)["environments"]] == ["part-compact-"]
    # a later run lands a shard under an old name: its listing is not the one the compaction replaced
    commit_run(wh, "run-late", DATE, {"environments": [land(wh, "environments", environments_frame(["e-late"]),
                                                            DATE, "s1")]}, {})
    ids = run_query(wh, "SELECT env_id FROM environments ORDER BY 1").column("env_id").to_pylist()
    assert ids == ["e-late", "e-s1", "e-s2"]
    assert set(TABLES) == set(visible_files(wh))


def test_check_compact_and_a_damaged_file_on_s3(s3_wh):  # noqa: F811 - the imported fixture
    for key in ("s1", "s2", "s3"):
        commit_run(s3_wh, f"run-{key}", DATE, {"environments": [land(s3_wh, "environments", environments_frame(
            [f"e-{key}-1", f"e-{key}-2"], f"run-{key}"), DATE, key)]}, {})
    sql = "SELECT env_id, run_id, u_star, date FROM environments ORDER BY env_id"
    before = run_query(s3_wh, sql).to_pylist()
    assert len(before) == 6 and check(s3_wh) == []
    assert compact(s3_wh) == [f"table environments, date {DATE}: 3 files, 6 rows -> "
                              f"{visible_files(s3_wh)['environments'][0]}"]
    assert run_query(s3_wh, sql).to_pylist() == before and check(s3_wh) == []
    assert len(s3_wh.fs.find(s3_wh.path("environments"))) == 1
    merged = s3_wh.path(visible_files(s3_wh)["environments"][0])
    s3_wh.fs.pipe_file(merged, b"garbage")
    with pytest.raises(QueryError, match=f"s3://{merged} \\(unreadable"):
        run_query(s3_wh, "SELECT count(*) FROM environments")
    assert check(s3_wh)[0].startswith(f"table environments: file s3://{merged} is unreadable")


def test_compaction_writes_one_file_sorted_by_env_id(tmp_path):
    wh = resolve_warehouse(str(tmp_path / "wh"))
    for key, ids in (("s1", ["qp-2", "lp-9"]), ("s2", ["knapsack-5", "qp-1"]), ("s3", ["lp-1"])):
        commit_run(wh, f"run-{key}", DATE, {"environments": [land(wh, "environments", environments_frame(ids), DATE,
                                                                        key)]}, {})
    compact(wh)
    (merged,) = visible_files(wh)["environments"]
    assert pq.read_table(wh.path(merged), columns=["env_id"]).column("env_id").to_pylist() == \
        ["knapsack-5", "lp-1", "lp-9", "qp-1", "qp-2"]
