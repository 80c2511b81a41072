"""The generate flow with its stages' CPU work on a real Dask cluster lands exactly what the thread runner lands."""

from __future__ import annotations

import socket

import pytest

from cli.main import main
from flows.generate import run_generate
from flows.runners import RunnerError, check_runner
from warehouse.catalog import run_query
from warehouse.location import resolve_warehouse

pytestmark = pytest.mark.integration

PLAN = {"date": "2026-05-03", "count": 12, "families": "inventory_dp,knapsack,lp", "shard_size": 4}


def _landed(warehouse: str) -> dict:
    wh = resolve_warehouse(warehouse)
    ids = run_query(wh, "SELECT env_id FROM environments ORDER BY env_id").column("env_id").to_pylist()
    counts = {t: run_query(wh, f"SELECT count(*) AS n FROM {t}").to_pylist()[0]["n"]
              for t in ("environments", "attempts")}
    per_family = run_query(wh, "SELECT family, count(*) AS n FROM environments GROUP BY ALL ORDER BY ALL").to_pylist()
    return {"ids": ids, "counts": counts, "per_family": per_family}


@pytest.fixture(scope="module")
def threads_landed(prefect_server, tmp_path_factory):
    warehouse = str(tmp_path_factory.mktemp("threads") / "wh")
    summary = run_generate(runner="threads", workers=2, warehouse=warehouse, **PLAN)
    assert summary["status"] == "completed" and summary["new_environments"] == 12
    return _landed(warehouse)


def test_a_local_dask_cluster_lands_the_same_environments_as_threads(threads_landed, prefect_server, tmp_path):
    warehouse = str(tmp_path / "wh")
    summary = run_generate(runner="dask", warehouse=warehouse, **PLAN)  # LocalCluster, 2 worker processes
    assert summary["status"] == "completed" and summary["new_environments"] == 12
    landed = _landed(warehouse)
    assert len(landed["ids"]) == 12 and landed == threads_landed
    assert landed["per_family"] == [{"family": f, "n": 4} for f in ("inventory_dp", "knapsack", "lp")]


def test_a_running_cluster_given_by_address_lands_the_same_environments(threads_landed, prefect_server, tmp_path,
                                                                         capsys):
    from distributed import LocalCluster

    warehouse = str(tmp_path / "wh")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=50) as cluster:
        rc = main(["generate", "--runner", "dask", "--dask-address", cluster.scheduler_address, "--no-progress",
                   "--warehouse", warehouse, "--date", PLAN["date"], "--count", str(PLAN["count"]),
                   "--families", PLAN["families"], "--shard-size", str(PLAN["shard_size"])])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "12 admitted (12 new)" in out and "status completed" in out
    assert "ERROR" not in out + err and "Traceback" not in out + err
    assert _landed(warehouse) == threads_landed


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _one_line_error(capsys, argv: list[str]) -> str:
    rc = main(["generate", "--count", "3", "--families", "lp", "--no-progress", *argv])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "", (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_bad_runner_settings_get_a_one_line_error(capsys, tmp_path, prefect_server):
    wh = ["--warehouse", str(tmp_path / "wh")]
    check_runner("dask", None, 0.5)  # a cost cap holds on dask (tests/flows/test_dask_cluster.py): not refused
    assert "must look like tcp://HOST:PORT" in _one_line_error(
        capsys, ["--runner", "dask", "--dask-address", "localhost:8786", *wh])
    port = _free_port()
    assert f"cannot reach the dask scheduler at tcp://127.0.0.1:{port}" in _one_line_error(
        capsys, ["--runner", "dask", "--dask-address", f"tcp://127.0.0.1:{port}", *wh])
    assert "--dask-address needs --runner dask" in _one_line_error(
        capsys, ["--dask-address", f"tcp://127.0.0.1:{port}", *wh])
    # something listens, but it is not a dask scheduler: the Prefect server's HTTP port
    server_port = prefect_server.rsplit(":", 1)[1].split("/")[0]
    assert "no dask scheduler answers" in _one_line_error(
        capsys, ["--runner", "dask", "--dask-address", f"tcp://127.0.0.1:{server_port}", *wh])
    with pytest.raises(RunnerError, match="unknown runner 'spark'; choose one of threads, dask"):
        check_runner("spark")
    with pytest.raises(SystemExit):  # argparse names the choices
        main(["generate", "--runner", "spark"])
    assert "invalid choice: 'spark'" in capsys.readouterr().err
    assert not (tmp_path / "wh").exists()  # refused before anything ran


def test_help_says_what_the_dask_runner_does_not_do(capsys):
    with pytest.raises(SystemExit):
        main(["generate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--runner {threads,dask}" in text and "--dask-address tcp://HOST:PORT" in text
    assert "progress bar moves as each shard's stages complete" in text


def _profiling(dask_worker) -> bool:
    return "profile" in dask_worker.periodic_callbacks


def test_the_local_cluster_runs_its_workers_without_the_statistical_profiler():
    """distributed's profiler samples a running stage's stack every 10 ms (13% more worker CPU in
    benchmarks/generate.py --runner dask); the cluster `--runner dask` starts for itself has it off."""
    from flows.runners import connect_dask

    pool = connect_dask(workers=2)
    try:
        profiling = pool._client.run(_profiling)
    finally:
        pool.shutdown()
    assert len(profiling) == 2 and not any(profiling.values()), profiling


def test_the_local_cluster_starts_without_a_warning_when_the_default_dashboard_port_is_taken():
    """Two `--runner dask` runs at once (or anything on 8787): the second's scheduler used to warn "Port 8787 is
    already in use. Perhaps you already have a cluster running?" on stderr; its HTTP server takes a free port."""
    import warnings

    from flows.runners import connect_dask

    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        holder.bind(("", 8787))
        holder.listen()
    except OSError:
        holder.close()  # something else holds 8787 already
    probe = socket.socket()
    with pytest.raises(OSError):  # the port is taken, by us or by whatever held it first
        probe.bind(("", 8787))
    probe.close()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pool = connect_dask(workers=1)
            pool.shutdown()
    finally:
        holder.close()
    assert not [str(w.message) for w in caught if "8787" in str(w.message)]
