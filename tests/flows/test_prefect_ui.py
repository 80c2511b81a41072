"""What Prefect's UI shows of a run, read back through the API of the real Prefect server the test session starts:
a generate run's per-family table artifact (checked against what landed in the warehouse), its task runs named after
stage and shard, and the nightly's link artifact to the night's report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flows.generate import run_generate
from flows.nightly import nightly
from tasks.commit import RUN_TABLE_KEY
from tasks.plan import plan_shards
from tasks.report import REPORT_LINK_KEY, report_link
from tests.flows.prefect_api import run_artifacts, settled_task_runs
from warehouse.catalog import run_query
from warehouse.location import resolve_warehouse

pytestmark = pytest.mark.integration
STAGES = ("sample", "solve", "render", "validate", "land")


def landed_per_family(wh, run_id: str) -> list[dict]:
    """What the run landed, per family, straight from the warehouse tables."""
    return run_query(wh, f"""
        WITH a AS (SELECT family, count(*) FILTER (WHERE NOT admitted) AS rejected FROM attempts
                   WHERE run_id = '{run_id}' GROUP BY family),
             e AS (SELECT family, count(*) AS admitted, sum(compute_seconds) AS compute_seconds FROM environments
                   WHERE run_id = '{run_id}' GROUP BY family),
             c AS (SELECT split_part(shard_key, '-', 1) AS family, sum(cost_usd) AS usd FROM llm_calls
                   WHERE run_id = '{run_id}' GROUP BY 1)
        SELECT a.family, coalesce(e.admitted, 0) AS admitted, a.rejected, coalesce(c.usd, 0.0) AS llm_usd,
               coalesce(e.compute_seconds, 0.0) AS compute_seconds
        FROM a LEFT JOIN e USING (family) LEFT JOIN c USING (family) ORDER BY a.family""").to_pylist()


def test_a_generate_run_shows_its_table_per_family_and_its_stages_by_shard(prefect_server, tmp_path):
    warehouse = str(tmp_path / "wh")
    params = {"date": "2026-05-03", "count": 40, "families": "knapsack,lp", "warehouse": warehouse, "shard_size": 10}
    summary = run_generate(workers=2, **params)
    wh = resolve_warehouse(warehouse)

    (artifact,) = run_artifacts(summary["flow_run_id"], RUN_TABLE_KEY)
    assert artifact.type == "table"
    *families, total = json.loads(artifact.data)
    expected = landed_per_family(wh, summary["run_id"])
    assert [f["family"] for f in families] == [e["family"] for e in expected] == ["knapsack", "lp"]
    for row, landed in zip(families, expected, strict=True):
        assert (row["admitted"], row["rejected"]) == (landed["admitted"], landed["rejected"]), row
        assert row["llm_usd"] == pytest.approx(landed["llm_usd"], abs=1e-8) and row["admitted"] == 20
        assert row["compute_seconds"] == pytest.approx(landed["compute_seconds"], abs=1e-3)
        assert landed["compute_seconds"] > 0
    assert total == {"family": "total", "admitted": 40, "rejected": summary["rejected"], "llm_usd": 0.0,
                     "compute_seconds": pytest.approx(summary["compute_seconds"], abs=1e-3)}
    assert f"Run `{summary['run_id']}` of 2026-05-03: **completed**, 40 admitted (40 new)" in artifact.description

    # every stage of every shard is a task run named after both, e.g. render-knapsack-train-0001
    shards = plan_shards(**{k: params[k] for k in ("date", "count", "families", "shard_size")})
    wanted = {f"{stage}-{s.family}-{s.split}-{s.index:04d}" for s in shards for stage in STAGES}
    wanted |= {"plan", "find-finished-shards", "commit"}
    runs = settled_task_runs(summary["flow_run_id"], lambda runs: wanted <= {r.name for r in runs})
    assert {r.name for r in runs} == wanted
    assert len(runs) == len(wanted) == 5 * len(shards) + 3  # one run per name: no two shards share one

    # the same night again lands nothing: its table says so, and which run it is
    again = run_generate(workers=2, **params)
    (artifact,) = run_artifacts(again["flow_run_id"], RUN_TABLE_KEY)
    assert json.loads(artifact.data) == [{"family": "total", "admitted": 0, "rejected": 0, "llm_usd": 0.0,
                                          "compute_seconds": 0.0}]
    assert f"Run `{again['run_id']}`" in artifact.description
    assert "40 environment(s) of shards committed by an earlier run" in artifact.description


def test_the_nightly_links_to_the_night_report(prefect_server, tmp_path):
    warehouse = str(tmp_path / "wh")
    state = nightly(count=2, families="lp", warehouse=warehouse, date="2026-05-04", workers=1, return_state=True)
    assert state.is_completed(), state.message
    path = state.result()["report"]["path"]
    (artifact,) = run_artifacts(state.state_details.flow_run_id, REPORT_LINK_KEY)
    text, link = re.fullmatch(r"\[(.*)\]\((.*)\)", artifact.data).groups()
    assert text == "dataset report of 2026-05-04"
    assert link == report_link(path) == (Path(warehouse) / "_reports" / "date=2026-05-04" / "report.html").as_uri()
    assert "lp" in Path(path).read_text() and "2026-05-04" in artifact.description
