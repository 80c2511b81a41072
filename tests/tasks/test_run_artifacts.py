"""What the Prefect UI shows of a run, built without Prefect: the per-family table, stage task-run names and the
report's link (the artifacts themselves are read back from a real server in tests/flows/test_prefect_ui.py)."""

from __future__ import annotations

from urllib.parse import unquote, urlparse

from tasks.commit import family_table, run_table_description
from tasks.common import shard_run_name
from tasks.land import LandedShard
from tasks.plan import plan_shards
from tasks.report import report_link
from tasks.validate import ShardResult


def test_the_table_sums_per_family_and_an_unknown_llm_cost_stays_unknown():
    landed = [LandedShard("lp-train-0000-aaaa", admitted=10, rejected=1, llm_cost_usd=0.25, compute_seconds=1.5,
                          family="lp"),
              LandedShard("knapsack-train-0000-bbbb", admitted=5, rejected=0, llm_cost_usd=None, compute_seconds=2.0,
                          family="knapsack"),
              LandedShard("lp-train-0001-cccc", admitted=7, rejected=2, llm_cost_usd=0.5, compute_seconds=0.25,
                          family="lp")]
    assert family_table(landed) == [
        {"family": "knapsack", "admitted": 5, "rejected": 0, "llm_usd": "unknown", "compute_seconds": 2.0},
        {"family": "lp", "admitted": 17, "rejected": 3, "llm_usd": 0.75, "compute_seconds": 1.75},
        {"family": "total", "admitted": 22, "rejected": 3, "llm_usd": "unknown", "compute_seconds": 3.75},
    ]
    assert family_table([]) == [{"family": "total", "admitted": 0, "rejected": 0, "llm_usd": 0.0,
                                 "compute_seconds": 0.0}]


def test_the_description_names_the_run_its_status_and_unknown_cost():
    summary = {"run_id": "r-1", "run_date": "2026-05-01", "status": "partial", "admitted": 12,
               "new_environments": 7, "rejected": 3, "llm_cost_usd": None, "wall_seconds": 4.25,
               "warehouse": "/w", "error": "lp-train-0000-x: solve failed after 2 tries: ValueError: bad"}
    text = run_table_description(summary, skipped_admitted=5)
    assert "Run `r-1` of 2026-05-01: **partial**" in text and "LLM unknown" in text and "$" not in text
    assert "5 environment(s) of shards committed by an earlier run" in text and "solve failed" in text


def test_stage_task_runs_are_named_after_stage_family_split_and_index():
    shard = plan_shards("2026-05-01", 30, "knapsack", shard_size=10)[2]
    assert shard_run_name("render")({"shard": shard, "solved": []}) == "render-knapsack-train-0002"
    assert shard_run_name("land")({"warehouse": None, "result": ShardResult(shard), "run_id": "r"}) == \
        "land-knapsack-train-0002"
    assert shard_run_name("land")({"warehouse": None, "result": None, "run_id": "r"}) == "land"


def test_a_local_report_links_as_a_file_url_and_a_remote_one_as_itself(tmp_path):
    local = tmp_path / "_reports" / "date=2026-05-01" / "report.html"
    assert report_link(str(local)) == local.as_uri() and report_link(str(local)).startswith("file:///")
    assert unquote(urlparse(report_link(str(local))).path) == str(local)  # a browser opens that very file
    assert report_link("s3://bucket/wh/_reports/date=2026-05-01/report.html") == \
        "s3://bucket/wh/_reports/date=2026-05-01/report.html"
