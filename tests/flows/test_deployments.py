"""The nightly deployment of infra/prefect.yaml, run the production way: a real Prefect server, a process work
pool, `prefect deploy`, a `prefect worker` subprocess, and runs triggered through the API."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from flows.generate import run_generate
from flows.nightly import night_of
from warehouse.catalog import run_query
from warehouse.location import resolve_warehouse

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
PREFECT = str(Path(sys.executable).parent / "prefect")
CONFIG = yaml.safe_load((ROOT / "infra" / "prefect.yaml").read_text())
NIGHTLY = next(d for d in CONFIG["deployments"] if d["name"] == "nightly")
NIGHT = dt.datetime(2026, 11, 30, 2, 0, tzinfo=dt.UTC)  # a night in the past: the worker runs it at once
PARAMETERS = {"count": 6, "families": "inventory_dp"}


def _ids(wh, date: str) -> list[str]:
    return run_query(wh, f"SELECT env_id FROM environments WHERE date = DATE '{date}' ORDER BY 1") \
        .column("env_id").to_pylist()


@pytest.fixture(scope="module")
def deployed(prefect_server, tmp_path_factory):
    """The nightly deployment registered from infra/prefect.yaml, and a worker of its pool, stopped at the end."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate

    pool = NIGHTLY["work_pool"]["name"]
    with get_client(sync_client=True) as client:
        client.create_work_pool(WorkPoolCreate(name=pool, type="process"), overwrite=True)
    env = {**os.environ, "PREFECT_API_URL": prefect_server, "PREFECT_WORKER_QUERY_SECONDS": "1",
           "PREFECT_LOGGING_LEVEL": "WARNING"}
    subprocess.run([PREFECT, "--no-prompt", "deploy", "--prefect-file", "infra/prefect.yaml", "--name", "nightly"],
                   cwd=ROOT, env=env, check=True, capture_output=True, text=True, timeout=180)
    logs = tmp_path_factory.mktemp("worker")
    log = open(logs / "worker.log", "w")
    worker = subprocess.Popen([PREFECT, "worker", "start", "--pool", pool, "--type", "process"], cwd=ROOT, env=env,
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        yield {"warehouse": str(tmp_path_factory.mktemp("nightly") / "wh"), "log": logs / "worker.log"}
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
        log.close()


def _run_night(deployed, when: dt.datetime):
    from prefect.deployments import run_deployment

    run = run_deployment(f"nightly/{NIGHTLY['name']}", parameters={**PARAMETERS, "warehouse": deployed["warehouse"]},
                         scheduled_time=when, timeout=300, poll_interval=1, as_subflow=False)
    assert run.state.is_completed(), (run.state, deployed["log"].read_text()[-3000:])
    return run


def _generate_run_id(parent) -> str:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName, FlowRunFilter, FlowRunFilterParentFlowRunId

    with get_client(sync_client=True) as client:
        (child,) = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[parent.id])),
            flow_filter=FlowFilter(name=FlowFilterName(any_=["generate"])))
    return str(child.id)


def test_the_api_reports_the_schedule_pool_and_concurrency_limit(deployed):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name(f"nightly/{NIGHTLY['name']}")
    (schedule,) = deployment.schedules
    assert schedule.schedule.cron == NIGHTLY["schedules"][0]["cron"] == "0 2 * * *"
    assert schedule.schedule.timezone == NIGHTLY["schedules"][0]["timezone"] == NIGHTLY["parameters"]["timezone"]
    assert schedule.active
    assert deployment.work_pool_name == NIGHTLY["work_pool"]["name"]
    assert deployment.global_concurrency_limit.limit == 1
    assert deployment.concurrency_options.collision_strategy == "ENQUEUE"
    assert deployment.entrypoint == "flows/nightly.py:nightly"


def test_a_triggered_night_lands_its_environments_and_runs_row_and_a_second_run_lands_nothing(deployed):
    wh = resolve_warehouse(deployed["warehouse"])
    first = _run_night(deployed, NIGHT)
    ids = _ids(wh, "2026-11-30")  # the run's date is the scheduled date
    assert len(ids) == PARAMETERS["count"]
    (row,) = run_query(wh, "SELECT * FROM runs").to_pylist()
    assert row["flow_run_id"] == _generate_run_id(first) and row["run_date"] == "2026-11-30"
    assert row["status"] == "completed" and row["new_environments"] == PARAMETERS["count"]
    counts = {t: run_query(wh, f"SELECT count(*) AS n FROM {t}").to_pylist()[0]["n"] for t in ("attempts", "llm_calls")}
    report = Path(deployed["warehouse"]) / "_reports" / "date=2026-11-30" / "report.html"
    assert report.is_file() and "inventory_dp" in report.read_text()  # the night's report, after the generation

    second = _run_night(deployed, NIGHT)  # the same night again: nothing new lands
    assert _ids(wh, "2026-11-30") == ids
    assert {t: run_query(wh, f"SELECT count(*) AS n FROM {t}").to_pylist()[0]["n"] for t in counts} == counts
    runs = run_query(wh, "SELECT flow_run_id, new_environments, admitted FROM runs ORDER BY started_at").to_pylist()
    assert runs[1] == {"flow_run_id": _generate_run_id(second), "new_environments": 0,
                       "admitted": PARAMETERS["count"]}


def test_a_missed_night_run_later_by_date_lands_what_it_would_have_and_each_night_is_new(deployed, tmp_path):
    wh = resolve_warehouse(deployed["warehouse"])
    if not _ids(wh, "2026-11-30"):
        _run_night(deployed, NIGHT)
    late = str(tmp_path / "late")  # as `vhd generate --date 2026-11-30` days later, into another warehouse
    run_generate(date="2026-11-30", warehouse=late, **PARAMETERS)
    assert _ids(resolve_warehouse(late), "2026-11-30") == _ids(wh, "2026-11-30")
    run_generate(date="2026-12-01", warehouse=late, **PARAMETERS)
    assert not set(_ids(resolve_warehouse(late), "2026-12-01")) & set(_ids(wh, "2026-11-30"))


@pytest.mark.parametrize(("scheduled", "zone", "night"), [
    (dt.datetime(2026, 11, 30, 2, 0, tzinfo=dt.UTC), "UTC", "2026-11-30"),
    (dt.datetime(2026, 11, 30, 1, 0, tzinfo=dt.UTC), "Europe/Paris", "2026-11-30"),  # 02:00 in Paris
    (dt.datetime(2026, 12, 1, 7, 0, tzinfo=dt.UTC), "America/Los_Angeles", "2026-11-30"),  # 23:00 the day before
])
def test_the_night_is_the_scheduled_date_in_the_schedule_time_zone(scheduled, zone, night):
    assert night_of(scheduled, zone) == night


def test_an_unknown_time_zone_is_one_line_naming_it():
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        night_of(NIGHT, "Mars/Olympus")
