"""Servers one client cannot starve: per-client session quotas, one session cap over every transport, request-body
read timeouts, and a dropped client logged as one line.

Real servers: `vhd serve-envs` and `vhd serve-openenv` as subprocesses with small caps. Two clients are two peer
addresses: the second one's connections leave from 127.0.0.2 (all of 127.0.0.0/8 is this machine's loopback).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.cli.test_hostile_values import land_specs
from tests.integrations.support import ROOT
from tests.support import make_spec

OTHER_CLIENT = "127.0.0.2"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """A `vhd` server subprocess on a free port; its stderr goes to a file the tests read."""

    def __init__(self, command: str, warehouse: str, log: Path, *options: str):
        self.port, self.log = _free_port(), log
        self.url = f"http://127.0.0.1:{self.port}"
        with open(log, "w") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "cli.main", command, "--warehouse", warehouse, "--port", str(self.port),
                 *options], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
        deadline = time.monotonic() + 90
        while True:
            assert self.process.poll() is None, f"vhd {command} ended: {log.read_text()}"
            assert time.monotonic() < deadline, f"vhd {command} did not start: {log.read_text()}"
            try:
                httpx.get(f"{self.url}/health", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.2)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


@pytest.fixture(scope="module")
def spec():
    return make_spec("inventory_dp", 3)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory, spec):
    return land_specs(str(tmp_path_factory.mktemp("fair-serving") / "wh"), [spec])


@pytest.fixture(scope="module")
def envs_server(warehouse, tmp_path_factory):
    server = Server("serve-envs", warehouse, tmp_path_factory.mktemp("fair-envs") / "stderr.log",
                    "--max-sessions", "5", "--sessions-per-client", "2", "--body-timeout", "1")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def openenv_server(warehouse, tmp_path_factory):
    server = Server("serve-openenv", warehouse, tmp_path_factory.mktemp("fair-openenv") / "stderr.log",
                    "--max-sessions", "4", "--sessions-per-client", "2")
    yield server
    server.stop()


def _client(url: str, address: str = "127.0.0.1") -> httpx.Client:
    return httpx.Client(base_url=url, transport=httpx.HTTPTransport(local_address=address), timeout=30)


def _raw(url: str, request: bytes, then_close_after: float | None = None) -> tuple[bytes, float]:
    """Send `request` (headers and part of a body) and wait: the answer's bytes and the seconds it took; with
    `then_close_after`, hang up after that many seconds instead of waiting for an answer."""
    host, port = url.removeprefix("http://").split(":")
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request)
        if then_close_after is not None:
            time.sleep(then_close_after)
            return b"", time.monotonic() - started
        answer = b""
        while True:
            try:
                data = sock.recv(65536)
            except OSError:
                break
            if not data:
                break
            answer += data
    return answer, time.monotonic() - started


PARTIAL_BODY = (b"POST /sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n"
                b'{"env_id": "inv')


# --- serve-envs ---------------------------------------------------------------------------------------------------

def test_a_client_at_its_quota_gets_429_while_another_client_still_gets_sessions(envs_server, spec):
    body = {"env_id": spec.env_id, "mode": "hidden"}
    with _client(envs_server.url) as greedy, _client(envs_server.url, OTHER_CLIENT) as other:
        mine = [greedy.post("/sessions", json=body) for _ in range(2)]
        assert [r.status_code for r in mine] == [201, 201]
        refused = greedy.post("/sessions", json=body)
        assert refused.status_code == 429
        detail = refused.json()["detail"]
        assert "127.0.0.1" in detail and "2 open sessions" in detail and "--sessions-per-client" in detail
        theirs = other.post("/sessions", json=body)
        assert theirs.status_code == 201, theirs.text  # the server still has room for someone else
        greedy.delete(f"/sessions/{mine[0].json()['session_id']}")  # closing one gives the greedy client a slot
        again = greedy.post("/sessions", json=body)
        assert again.status_code == 201
        for response in (mine[1], theirs, again):
            sid = response.json()["session_id"]
            (other if response is theirs else greedy).delete(f"/sessions/{sid}")


def test_a_stalled_request_body_is_answered_408_within_the_body_timeout(envs_server):
    answer, took = _raw(envs_server.url, PARTIAL_BODY)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split()[1] == b"408", answer
    assert "not received within 1 s" in json.loads(body)["detail"]
    assert took < 5  # --body-timeout 1: not held open for a minute
    assert b"connection: close" in head.lower()


def test_many_stalled_bodies_are_not_held_open(envs_server):
    socks = []
    for _ in range(20):
        sock = socket.create_connection(("127.0.0.1", envs_server.port), timeout=10)
        sock.sendall(PARTIAL_BODY)
        socks.append(sock)
    time.sleep(3)
    closed = 0
    for sock in socks:
        answer = sock.recv(65536)
        closed += answer.startswith(b"HTTP/1.1 408")
        sock.close()
    assert closed == 20  # every one answered and dropped by the server, none held
    assert httpx.get(f"{envs_server.url}/health").status_code == 200


def test_a_client_that_drops_mid_body_is_one_log_line_without_traceback(envs_server, spec):
    with _client(envs_server.url) as client:
        session = client.post("/sessions", json={"env_id": spec.env_id}).json()["session_id"]
        before = envs_server.log.read_text()
        call = (f"POST /sessions/{session}/call HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                'Content-Length: 100\r\n\r\n{"name": "tu').encode()
        _raw(envs_server.url, call, then_close_after=0.3)
        client.delete(f"/sessions/{session}")
    deadline = time.monotonic() + 10
    while "went away" not in envs_server.log.read_text()[len(before):] and time.monotonic() < deadline:
        time.sleep(0.1)
    new = envs_server.log.read_text()[len(before):]
    lines = [line for line in new.splitlines() if line.strip()]
    assert len(lines) == 1, new
    assert f"went away before the request body of POST /sessions/{session}/call ended" in lines[0]
    assert "Traceback" not in new and "ClientDisconnect" not in new and "ERROR" not in new


def test_serve_envs_refuses_a_per_client_quota_out_of_bounds(warehouse):
    completed = subprocess.run([sys.executable, "-m", "cli.main", "serve-envs", "--warehouse", warehouse,
                                "--sessions-per-client", "0"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert completed.returncode == 2
    assert completed.stderr.strip() == "error: --sessions-per-client must be at least 1, got 0"


# --- serve-openenv: WebSocket and /mcp sessions under one cap and one quota per client ------------------------------

def _mcp_create(client: httpx.Client) -> dict:
    answer = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}})
    assert answer.status_code == 200
    return answer.json()


def _mcp_close(client: httpx.Client, session_id: str) -> None:
    client.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "openenv/session/close",
                              "params": {"session_id": session_id}})


def _ws_reset(url: str, address: str, env_id: str) -> dict:
    """The first answer a WebSocket from `address` gets: an error at connect, else its reset's observation."""
    with connect(url.replace("http://", "ws://") + "/ws", source_address=(address, 0), open_timeout=30) as ws:
        try:
            ws.send(json.dumps({"type": "reset", "data": {"env_id": env_id, "mode": "hidden"}}))
        except ConnectionClosed:  # refused at connect: its error came before the close
            pass
        return json.loads(ws.recv(timeout=30))


def test_mcp_sessions_count_against_the_same_clients_websocket_quota_not_anothers(openenv_server, spec):
    with _client(openenv_server.url) as greedy:
        made = [_mcp_create(greedy)["result"]["session_id"] for _ in range(2)]
        try:
            over_mcp = _mcp_create(greedy)
            assert over_mcp["error"]["code"] == -32000 and "--sessions-per-client" in over_mcp["error"]["message"]
            over_ws = _ws_reset(openenv_server.url, "127.0.0.1", spec.env_id)
            assert over_ws["type"] == "error" and over_ws["data"]["code"] == "CAPACITY_REACHED"
            assert "already has 2 open sessions" in over_ws["data"]["message"]
            played = _ws_reset(openenv_server.url, OTHER_CLIENT, spec.env_id)  # another client is still served
            assert played["type"] == "observation" and played["data"]["observation"]["env_id"] == spec.env_id
        finally:
            for session_id in made:
                _mcp_close(greedy, session_id)
    assert httpx.get(f"{openenv_server.url}/health").json()["sessions"] == 0


def test_websocket_and_mcp_sessions_share_one_cap(openenv_server, spec):
    clients = [_client(openenv_server.url, f"127.0.0.{host}") for host in (3, 4)]
    made = [(client, _mcp_create(client)["result"]["session_id"]) for client in clients for _ in range(2)]
    try:  # 4 sessions over /mcp from two clients fill --max-sessions 4: a fifth client's WebSocket is refused
        refused = _ws_reset(openenv_server.url, "127.0.0.5", spec.env_id)
        assert refused["type"] == "error" and refused["data"]["code"] == "CAPACITY_REACHED"
        assert "at capacity (4 sessions are open)" in refused["data"]["message"]
    finally:
        for client, session_id in made:
            _mcp_close(client, session_id)
        for client in clients:
            client.close()
    assert _ws_reset(openenv_server.url, "127.0.0.5", spec.env_id)["type"] == "observation"


def test_a_websocket_dropped_without_a_close_frame_leaves_no_traceback(openenv_server, spec):
    before = openenv_server.log.read_text()
    for _ in range(3):
        with connect(openenv_server.url.replace("http://", "ws://") + "/ws", open_timeout=30) as ws:
            ws.send(json.dumps({"type": "reset", "data": {"env_id": spec.env_id, "mode": "hidden"}}))
            assert json.loads(ws.recv(timeout=30))["type"] == "observation"
            ws.socket.shutdown(socket.SHUT_RDWR)  # gone without a close frame
    deadline = time.monotonic() + 10
    while httpx.get(f"{openenv_server.url}/health").json()["sessions"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert httpx.get(f"{openenv_server.url}/health").json()["sessions"] == 0  # each session closed with its socket
    time.sleep(0.5)
    new = openenv_server.log.read_text()[len(before):]
    assert "Traceback" not in new and "ERROR" not in new, new
