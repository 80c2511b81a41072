"""Test session services: a real Prefect server on 127.0.0.1, started once for the tests that need it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session", autouse=True)
def vhd_home(tmp_path_factory):
    """The tests' VHD_HOME: a command run without PREFECT_API_URL keeps its local Prefect server there, never in
    the user's data folder, and that server is stopped when the session ends."""
    home = tmp_path_factory.mktemp("vhd-home")
    previous = os.environ.get("VHD_HOME")
    os.environ["VHD_HOME"] = str(home)
    yield home
    from cli.prefect_server import stop_server

    stop_server(home / "prefect-server")
    if previous is None:
        os.environ.pop("VHD_HOME", None)
    else:
        os.environ["VHD_HOME"] = previous


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory):
    """A persistent Prefect server (SQLite) on a free loopback port; its API URL is exported to the tests."""
    home = tmp_path_factory.mktemp("prefect-home")
    port = _free_port()
    url = f"http://127.0.0.1:{port}/api"
    from cli.prefect_server import SERVER_BATCHING  # task runs and events written as the local server writes them

    env = {**SERVER_BATCHING, **os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "PREFECT_SERVER_UI_ENABLED": "false", "PREFECT_LOGGING_LEVEL": "WARNING"}
    log = open(home / "server.log", "w")
    command = [str(VENV_BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            time.sleep(0.5)
        if process.poll() is not None:
            raise RuntimeError(f"prefect server exited: {(home / 'server.log').read_text()[-2000:]}")
    else:
        process.kill()
        raise RuntimeError("prefect server did not become healthy in 120 s")
    previous = {k: os.environ.get(k) for k in ("PREFECT_API_URL", "PREFECT_HOME")}
    client_home = tmp_path_factory.mktemp("prefect-client")
    os.environ["PREFECT_API_URL"] = url
    os.environ["PREFECT_HOME"] = str(client_home)
    from prefect.settings import PREFECT_API_URL, PREFECT_HOME, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: url, PREFECT_HOME: str(client_home)}):
        yield url
        from prefect.logging.handlers import APILogHandler

        APILogHandler().flush()  # send queued run logs while the server is still up
    for key, value in previous.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()


@pytest.fixture(scope="session")
def local_llm(tmp_path_factory):
    """The real local model (gemma-3-270m behind llama-cpp-python's server) on a free loopback port, started once.

    Yields (litellm model name, api_base). `make test` installs the [llm] extra; without it these tests fail
    (they are never skipped: a skipped test must not pass for a run one).
    """
    from setter.local_server import LocalModelServer

    server = LocalModelServer(log_path=tmp_path_factory.mktemp("local-llm") / "server.log")
    with server:
        yield server.model, server.api_base
