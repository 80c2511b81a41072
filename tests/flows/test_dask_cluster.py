"""The generate flow on a real multi-process Dask cluster (`dask scheduler` and `dask worker` started as commands):
the same ids as the default runner (qp included), every environment exactly once when a worker is killed mid-run,
and a cost cap that holds, since the model is asked from the flow's process only."""

from __future__ import annotations

import contextvars
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from flows.generate import run_generate
from tasks.progress import ProgressHub, following
from tests.setter.llm_script import ScriptedModel, answer
from warehouse.catalog import run_query
from warehouse.location import resolve_warehouse

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]
# ids hash every bit of a solver's result: one BLAS thread everywhere, until ids no longer depend on it (issue 30, 0)
ONE_BLAS_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
PLAN = ["--date", "2026-06-07", "--count", "48", "--families", "qp,knapsack,lp,inventory_dp", "--shard-size", "6"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env() -> dict:
    return {**os.environ, **ONE_BLAS_THREAD, "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """`dask scheduler` and `dask worker --nworkers 2 --nthreads 1`, separate processes as a user starts them."""
    logs = tmp_path_factory.mktemp("dask")
    address = f"tcp://127.0.0.1:{_free_port()}"
    started = [subprocess.Popen([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port",
                                 address.rsplit(":", 1)[1], "--no-dashboard"], env=_env(), cwd=ROOT,
                                stdout=open(logs / "scheduler.log", "w"), stderr=subprocess.STDOUT)]
    started.append(subprocess.Popen([str(BIN / "dask"), "worker", address, "--nworkers", "2", "--nthreads", "1",
                                     "--no-dashboard", "--local-directory", str(logs)], env=_env(), cwd=ROOT,
                                    stdout=open(logs / "worker.log", "w"), stderr=subprocess.STDOUT))
    from distributed import Client

    client = Client(address, timeout=60, set_as_default=False)
    client.wait_for_workers(2, timeout=120)
    yield address, client
    client.close()
    for process in reversed(started):
        process.terminate()
    for process in reversed(started):
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def _landed(warehouse: str) -> dict:
    wh = resolve_warehouse(warehouse)
    rows = run_query(wh, "SELECT env_id, count(*) AS n FROM environments GROUP BY env_id ORDER BY env_id").to_pylist()
    return {"ids": [row["env_id"] for row in rows], "most_copies": max(row["n"] for row in rows)}


@pytest.fixture(scope="module")
def default_landed(prefect_server, tmp_path_factory):
    """The default runner (threads, two worker processes), as a user runs it."""
    warehouse = str(tmp_path_factory.mktemp("default") / "wh")
    done = subprocess.run([str(BIN / "vhd"), "generate", *PLAN, "--processes", "2", "--no-progress",
                           "--warehouse", warehouse], env=_env(), cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    landed = _landed(warehouse)
    assert len(landed["ids"]) == 48 and any(env_id.startswith("qp-") for env_id in landed["ids"])
    return landed


def _generate(address: str, warehouse: str, hub: ProgressHub | None = None) -> dict:
    parameters = {"date": PLAN[1], "count": int(PLAN[3]), "families": PLAN[5], "shard_size": int(PLAN[7])}
    with following(hub or ProgressHub()):
        return run_generate(runner="dask", dask_address=address, warehouse=warehouse, **parameters)


def test_a_cluster_of_worker_commands_lands_the_default_runners_ids(cluster, default_landed, prefect_server,
                                                                    tmp_path):
    address, _ = cluster
    summary = _generate(address, str(tmp_path / "wh"))
    assert summary["status"] == "completed" and summary["new_environments"] == 48
    assert _landed(str(tmp_path / "wh")) == default_landed


def test_a_worker_killed_mid_run_still_lands_every_environment_exactly_once(cluster, default_landed, prefect_server,
                                                                            tmp_path):
    address, client = cluster
    hub, outcome = ProgressHub(), {}
    hub.reset(48)
    context = contextvars.copy_context()  # Prefect's settings (the test server's API URL) are context variables
    run = threading.Thread(target=lambda: outcome.update(
        summary=context.run(_generate, address, str(tmp_path / "wh"), hub)))
    run.start()
    deadline = time.monotonic() + 300
    while hub.counters.admitted < 6 and run.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)  # a first round validated: the run is under way, both workers busy with the next stages
    assert 6 <= hub.counters.admitted < 48, "the run ended before a worker could be killed: make the plan larger"
    victim = sorted(client.run(os.getpid).items())[0][1]
    os.kill(victim, signal.SIGKILL)
    run.join(600)
    assert outcome["summary"]["status"] == "completed" and outcome["summary"]["new_environments"] == 48
    assert _landed(str(tmp_path / "wh")) == default_landed  # each id once (most_copies 1), the same ids
    assert victim not in client.run(os.getpid).values()  # the worker did die (its nanny started another)


def test_a_cost_cap_holds_on_dask_within_one_call_per_stage_thread(prefect_server, tmp_path, monkeypatch):
    monkeypatch.setenv("VHD_LLM_CACHE", str(tmp_path / "llm-cache"))
    monkeypatch.setenv("VHD_LLM_RETRY_WAIT", "0.01")
    monkeypatch.delenv("VHD_LLM_OPTIONS", raising=False)
    per_call, cap = 0.01, 0.035
    scripted = ScriptedModel(monkeypatch, [answer()], provider_cost=per_call)  # the model answers in this process
    summary = run_generate(runner="dask", warehouse=str(tmp_path / "wh"), max_cost_usd=cap, date="2026-03-06",
                           count=16, families="inventory_dp", shard_size=2, setter="litellm", model="gpt-4o-mini")
    assert summary["status"] == "partial" and "LLM budget (--max-cost-usd) was reached" in summary["error"]
    paid = len(scripted.requests)
    stage_threads = 4  # flows.runners.stage_threads for the local cluster's 2 workers: one call each may be in flight
    assert cap <= paid * per_call <= cap + stage_threads * per_call + 1e-9
    wh = resolve_warehouse(str(tmp_path / "wh"))
    calls = run_query(wh, "SELECT count(*) AS n, sum(cost_usd) AS usd FROM llm_calls").to_pylist()[0]
    assert calls["n"] == paid and calls["usd"] == pytest.approx(paid * per_call)  # every paid call is recorded
    assert 1 <= summary["new_environments"] < 16
