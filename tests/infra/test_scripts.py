"""infra/scripts start the local services on 127.0.0.1 (really: Prefect server and moto_server) and stop them."""

from __future__ import annotations

import os
import socket
import subprocess
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
SCRIPTS = Path(__file__).resolve().parents[2] / "infra" / "scripts"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_start_then_stop_the_local_services(tmp_path):
    ports = {"PREFECT_PORT": _free_port(), "MOTO_PORT": _free_port()}
    env = {**os.environ, "VHD_SERVICES_DIR": str(tmp_path), **{k: str(v) for k, v in ports.items()}}
    env.pop("PREFECT_HOME", None)
    started = subprocess.run([str(SCRIPTS / "start-local-services.sh")], env=env, capture_output=True, text=True,
                             timeout=300)
    pids = {name: int((tmp_path / f"{name}.pid").read_text()) for name in ("prefect", "moto")
            if (tmp_path / f"{name}.pid").exists()}
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        prefect = f"http://127.0.0.1:{ports['PREFECT_PORT']}/api"
        with urllib.request.urlopen(f"{prefect}/health", timeout=10) as response:
            assert response.status == 200
        import boto3

        s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{ports['MOTO_PORT']}", region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
        s3.create_bucket(Bucket="vhd-scripts")
        assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == ["vhd-scripts"]
        settings = (tmp_path / "env.sh").read_text()
        assert f"PREFECT_API_URL={prefect}" in settings
        assert f"VHD_S3_ENDPOINT_URL=http://127.0.0.1:{ports['MOTO_PORT']}" in settings
        again = subprocess.run([str(SCRIPTS / "start-local-services.sh")], env=env, capture_output=True, text=True,
                               timeout=120)
        assert again.returncode == 0 and "already running" in again.stdout  # starting twice is harmless
    finally:
        stopped = subprocess.run([str(SCRIPTS / "stop-local-services.sh")], env=env, capture_output=True, text=True,
                                 timeout=120)
    assert stopped.returncode == 0 and "stopped prefect" in stopped.stdout and "stopped moto" in stopped.stdout
    assert not any(_alive(pid) for pid in pids.values())
    with socket.socket() as sock:  # nothing listens there any more (TIME_WAIT connections aside)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", ports["PREFECT_PORT"]))


def test_an_unknown_option_or_a_busy_port_is_one_line(tmp_path):
    env = {**os.environ, "VHD_SERVICES_DIR": str(tmp_path)}
    bad = subprocess.run([str(SCRIPTS / "start-local-services.sh"), "--nope"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.strip() == "error: unknown option --nope (use --llm to start the " \
        "local model too)"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        taken = subprocess.run([str(SCRIPTS / "start-local-services.sh")], env={**env, "PREFECT_PORT": str(port)},
                               capture_output=True, text=True, timeout=60)
    assert taken.returncode == 1 and f"port {port} for prefect is in use" in taken.stderr
    assert len(taken.stderr.strip().splitlines()) == 1
    nothing = subprocess.run([str(SCRIPTS / "stop-local-services.sh")], env=env, capture_output=True, text=True,
                             timeout=60)
    assert nothing.returncode == 0 and "no services were running" in nothing.stdout
