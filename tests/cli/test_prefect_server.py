"""The local Prefect server: the first command without PREFECT_API_URL starts it, later ones reuse it.

Everything here is real: `vhd` as a subprocess, `prefect server start` as the server, processes found in /proc.
Each test has its own VHD_HOME and stops the servers it started, even when it fails.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

VHD = str(Path(sys.executable).parent / "vhd")
DROP = ("PREFECT_API_URL", "PREFECT_HOME", "PREFECT_PROFILE", "PREFECT_PROFILES_PATH", "VHD_PREFECT_START_TIMEOUT")


def _env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a user with no Prefect API configured: no PREFECT_API_URL, a fresh Prefect client home
    (so no profile names a server either), and the given VHD_HOME."""
    env = {k: v for k, v in os.environ.items() if k not in DROP}
    env.update(VHD_HOME=str(home), PREFECT_HOME=str(home / "client"), **extra)
    return env


def vhd(home: Path, *args: str, timeout: float = 400, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([VHD, *args], env=_env(home, **extra), capture_output=True, text=True, timeout=timeout)


def generate(home: Path, warehouse: Path, **extra: str) -> subprocess.CompletedProcess:
    return vhd(home, "generate", "--count", "3", "--families", "knapsack", "--warehouse", str(warehouse),
               "--no-progress", **extra)


def server_processes(home: Path) -> list[int]:
    """Ids of the `prefect server start` processes whose PREFECT_HOME is this VHD_HOME's server folder."""
    wanted = f"PREFECT_HOME={home / 'prefect-server'}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and b"server" in words and b"start" in words and any(w.endswith(b"prefect") for w in words) \
                and wanted in environ:
            found.append(int(entry.name))
    return found


def record(home: Path) -> dict:
    return json.loads((home / "prefect-server" / "server.json").read_text())


def health(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def assert_clean(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, result.stderr[-3000:]
    for stream in (result.stdout, result.stderr):
        assert "Traceback" not in stream and "ERROR" not in stream, stream[-3000:]


@pytest.fixture
def home(tmp_path):
    """A fresh VHD_HOME; whatever server a test started there is stopped afterwards (by `vhd server stop`, and
    by signal if that left anything)."""
    path = tmp_path / "vhd-home"
    yield path
    vhd(path, "server", "stop", timeout=60)
    for pid in server_processes(path):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


@pytest.mark.integration
def test_the_first_command_starts_the_server_and_the_next_reuses_it(home, tmp_path):
    first = generate(home, tmp_path / "wh1")
    assert_clean(first)
    assert "3 admitted" in first.stdout
    assert "started the local Prefect server" in first.stderr
    server = record(home)
    assert server["home"] == str(home / "prefect-server") and Path(server["log"]).exists()
    assert server["url"] == f"http://127.0.0.1:{server['port']}/api" and health(server["url"])
    assert server_processes(home) == [server["pid"]]

    started = time.monotonic()
    second = generate(home, tmp_path / "wh2")
    assert_clean(second)
    assert "3 admitted" in second.stdout and "started the local Prefect server" not in second.stderr
    assert record(home) == server  # the same server: same pid, url and start time
    assert server_processes(home) == [server["pid"]]
    assert time.monotonic() - started < 120

    # the runs went to that server: both flow runs are in its database
    request = urllib.request.Request(f"{server['url']}/flow_runs/filter", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        runs = json.loads(response.read())
    assert sum(run["state_type"] == "COMPLETED" for run in runs) >= 2

    # the server writes task runs in batches (cli.prefect_server.SERVER_BATCHING), and still writes every one:
    # each flow run's sample, solve, render, validate and land reach it as completed task runs
    environ = Path(f"/proc/{server['pid']}/environ").read_bytes().split(b"\0")
    assert b"PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE=200" in environ
    assert b"PREFECT_SERVER_SERVICES_EVENT_PERSISTER_BATCH_SIZE=200" in environ
    deadline, stages = time.monotonic() + 60, []
    while time.monotonic() < deadline:
        request = urllib.request.Request(f"{server['url']}/task_runs/filter", data=b"{}", method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            stages = [run["name"].split("-")[0] for run in json.loads(response.read())
                      if run["state_type"] == "COMPLETED"]
        if all(stages.count(stage) >= 2 for stage in ("sample", "solve", "render", "validate", "land")):
            break
        time.sleep(0.5)
    assert all(stages.count(stage) >= 2 for stage in ("sample", "solve", "render", "validate", "land")), stages
    # and keeps their events for the UI's event feed, in batches too (at least every 5 s)
    deadline, events = time.monotonic() + 60, set()
    while time.monotonic() < deadline:
        request = urllib.request.Request(f"{server['url']}/events/filter", data=json.dumps({"limit": 50}).encode(),
                                         method="POST", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            events = {event["event"] for event in json.loads(response.read())["events"]}
        if {"prefect.task-run.Completed", "prefect.flow-run.Completed"} <= events:
            break
        time.sleep(0.5)
    assert {"prefect.task-run.Completed", "prefect.flow-run.Completed"} <= events, events


def test_a_users_own_recorder_setting_wins(tmp_path, monkeypatch):
    from cli.prefect_server import SERVER_BATCHING, _server_env

    monkeypatch.setenv("PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE", "7")
    env = _server_env(tmp_path)
    assert env["PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE"] == "7"
    assert all(env[name] == value for name, value in SERVER_BATCHING.items()
               if name != "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE")


@pytest.mark.integration
def test_two_commands_started_together_start_one_server_and_replace_a_stale_record(home, tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    (home / "prefect-server").mkdir(parents=True)
    (home / "prefect-server" / "server.json").write_text(json.dumps(
        {"url": "http://127.0.0.1:9/api", "port": 9, "pid": dead.pid, "home": str(home / "prefect-server"),
         "log": str(home / "prefect-server" / "server.log"), "started_at": "2026-01-01T00:00:00+00:00"}))
    # a third starter holds the start lock (as a command would while its server starts): neither may start one
    lock = open(home / "prefect-server" / "start.lock", "a+")  # noqa: SIM115 - released below, or at exit
    fcntl.flock(lock, fcntl.LOCK_EX)
    # each waits for the same instant, then becomes `vhd generate`: they reach the start check together
    at = time.time() + 2.0
    commands = []
    for i in range(2):
        argv = [VHD, "generate", "--count", "3", "--families", "knapsack", "--warehouse", str(tmp_path / f"wh{i}"),
                "--no-progress"]
        barrier = f"import os, time\nwhile time.time() < {at}:\n    time.sleep(0.001)\nos.execv({VHD!r}, {argv!r})"
        commands.append(subprocess.Popen([sys.executable, "-c", barrier], env=_env(home), text=True,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    time.sleep(max(0.0, at + 4.0 - time.time()))
    try:
        assert server_processes(home) == [] and all(command.poll() is None for command in commands)
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
    outputs = [command.communicate(timeout=400) for command in commands]
    for command, (stdout, stderr) in zip(commands, outputs, strict=True):
        assert command.returncode == 0, stderr[-3000:]
        assert "3 admitted" in stdout and "Traceback" not in stderr
    assert sum("started the local Prefect server" in stderr for _, stderr in outputs) == 1
    server = record(home)
    assert server["pid"] != dead.pid and health(server["url"])
    assert server_processes(home) == [server["pid"]]


@pytest.mark.integration
def test_a_start_that_times_out_ends_in_one_line_and_leaves_nothing_running(home, tmp_path):
    result = generate(home, tmp_path / "wh", VHD_PREFECT_START_TIMEOUT="0.5")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: the local Prefect server did not answer within 0.5 s"), lines[0]
    assert "VHD_PREFECT_START_TIMEOUT" in lines[0] and str(home / "prefect-server" / "server.log") in lines[0]
    assert server_processes(home) == []
    assert not (home / "prefect-server" / "server.json").exists()
    assert not (tmp_path / "wh").exists()


def test_a_bad_start_timeout_is_one_line(home, tmp_path):
    result = generate(home, tmp_path / "wh", VHD_PREFECT_START_TIMEOUT="soon")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip() == "error: VHD_PREFECT_START_TIMEOUT must be a positive number of seconds, got 'soon'"
    assert server_processes(home) == []


def test_commands_that_need_no_api_start_no_server(home, tmp_path):
    assert vhd(home, "families", timeout=120).returncode == 0
    doctor = vhd(home, "doctor", "--warehouse", str(tmp_path / "wh"), "--format", "json", timeout=180)
    checks = {c["service"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["prefect api"]["status"] == "note", checks["prefect api"]
    assert "the local server is not running" in checks["prefect api"]["detail"]
    assert not (home / "prefect-server" / "server.json").exists() and server_processes(home) == []
    status = vhd(home, "server", "status", timeout=60)
    assert status.returncode == 0 and "no local Prefect server is recorded" in status.stdout
    stop = vhd(home, "server", "stop", timeout=60)
    assert stop.returncode == 0 and "nothing to stop" in stop.stdout


@pytest.mark.integration
def test_server_start_status_doctor_and_stop(home, tmp_path):
    start = vhd(home, "server", "start")
    assert_clean(start)
    server = record(home)
    assert f"api:     {server['url']}" in start.stdout and "running, answers" in start.stdout
    again = vhd(home, "server", "start", timeout=60)
    assert again.returncode == 0 and record(home) == server and "started" not in again.stderr

    status = vhd(home, "server", "status", timeout=60)
    assert status.returncode == 0 and "running, answers" in status.stdout
    for needle in (server["url"], f"ui:      http://127.0.0.1:{server['port']}", str(server["pid"]), server["log"]):
        assert needle in status.stdout, status.stdout
    doctor = vhd(home, "doctor", "--warehouse", str(tmp_path / "wh"), "--format", "json", timeout=180)
    report = json.loads(doctor.stdout)
    checks = {c["service"]: c for c in report["checks"]}
    settings = {r["setting"]: r["value"] for r in report["configuration"]}
    assert checks["prefect api"]["status"] == "ok" and server["url"] in checks["prefect api"]["detail"]
    assert settings["prefect api"].startswith(f"{server['url']} (the local server")

    stop = vhd(home, "server", "stop", timeout=60)
    assert stop.returncode == 0 and f"stopped the local Prefect server (pid {server['pid']}" in stop.stdout
    assert server_processes(home) == [] and not health(server["url"])
    after = vhd(home, "server", "status", timeout=60)
    assert after.returncode == 0 and "no local Prefect server is recorded" in after.stdout


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _one_line(result: subprocess.CompletedProcess, code: int) -> str:
    assert result.returncode == code and "Traceback" not in result.stderr, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.integration
def test_generate_starts_the_server_on_the_chosen_port_and_a_different_one_is_refused(home, tmp_path):
    port = _free_port()
    result = vhd(home, "generate", "--count", "3", "--families", "knapsack", "--warehouse", str(tmp_path / "wh"),
                 "--no-progress", "--prefect-port", str(port))
    assert_clean(result)
    assert "3 admitted" in result.stdout
    assert "started the local Prefect server in" in result.stderr and f"http://127.0.0.1:{port}/api" in result.stderr
    server = record(home)
    assert server["port"] == port and server["url"] == f"http://127.0.0.1:{port}/api"
    assert health(f"http://127.0.0.1:{port}/api") and server_processes(home) == [server["pid"]]
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/flow_runs/filter", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:  # the run went to the server on that port
        assert [run["state_type"] for run in json.loads(response.read())] == ["COMPLETED"]

    again = vhd(home, "server", "start", timeout=60, VHD_PREFECT_PORT=str(port))  # the same port: reused
    assert again.returncode == 0 and record(home) == server and "started" not in again.stderr
    other = _free_port()
    refused = _one_line(vhd(home, "server", "start", "--prefect-port", str(other), timeout=60), 1)
    assert refused == (f"error: --prefect-port asks for port {other}, but the local Prefect server already runs on "
                       f"port {port} (http://127.0.0.1:{port}/api, pid {server['pid']}); run `vhd server stop` to "
                       f"start it on {other}, or leave --prefect-port unset to use it")
    refused = _one_line(generate(home, tmp_path / "wh2", VHD_PREFECT_PORT=str(other)), 1)
    assert f"error: VHD_PREFECT_PORT asks for port {other}" in refused
    assert record(home) == server and server_processes(home) == [server["pid"]]
    assert not (tmp_path / "wh2").exists()


def test_a_port_another_program_holds_is_refused_and_nothing_starts(home, tmp_path):
    import socket

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        line = _one_line(vhd(home, "server", "start", "--prefect-port", str(port), timeout=60), 1)
        assert line.startswith(f"error: port {port} on 127.0.0.1 (--prefect-port) is in use by another program"), line
        line = _one_line(generate(home, tmp_path / "wh", VHD_PREFECT_PORT=str(port)), 1)
        assert line.startswith(f"error: port {port} on 127.0.0.1 (VHD_PREFECT_PORT) is in use"), line
    assert server_processes(home) == [] and not (home / "prefect-server" / "server.json").exists()
    assert not (tmp_path / "wh").exists()


def test_a_bad_port_is_one_line_before_anything_starts(home, tmp_path):
    for args, extra, needle in (
        (["--prefect-port", "70000"], {}, "--prefect-port must be a port number from 1 to 65535, got '70000'"),
        (["--prefect-port", "http"], {}, "--prefect-port must be a port number from 1 to 65535, got 'http'"),
        ([], {"VHD_PREFECT_PORT": "0"}, "VHD_PREFECT_PORT must be a port number from 1 to 65535, got '0'"),
    ):
        result = vhd(home, "generate", "--count", "3", "--warehouse", str(tmp_path / "wh"), *args, timeout=120,
                     **extra)
        assert _one_line(result, 2).startswith(f"error: {needle}")
    assert _one_line(vhd(home, "server", "start", "--prefect-port", "-1", timeout=60), 2).startswith(
        "error: --prefect-port must be a port number from 1 to 65535, got '-1'")
    assert _one_line(vhd(home, "server", "status", "--prefect-port", "4300", timeout=60), 2) == (
        "error: --prefect-port applies to `vhd server start` (and `vhd generate`); `vhd server status` takes no port")
    # with PREFECT_API_URL set no local server starts: a port for it would be ignored, so it is refused
    line = _one_line(vhd(home, "generate", "--count", "3", "--warehouse", str(tmp_path / "wh"), "--prefect-port",
                         "4300", timeout=120, PREFECT_API_URL="http://127.0.0.1:9/api"), 1)
    assert line.startswith("error: --prefect-port chooses the local Prefect server's port, but PREFECT_API_URL is set")
    assert server_processes(home) == [] and not (tmp_path / "wh").exists()
