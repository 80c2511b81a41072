"""`vhd serve-envs`' HTTP API on a real uvicorn server: isolated concurrent sessions and each bad request."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import uvicorn

from envs.agents import default, oracle
from envs.catalog import select_specs
from envs.environment import Environment
from serving.http import catalog_loader, create_app
from tests.evaluation.support import generated_warehouse
from tests.integrations.support import ROOT
from warehouse.location import resolve_warehouse


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start(warehouse: str, ttl_s: float):
    port = _free_port()
    config = uvicorn.Config(create_app(catalog_loader(resolve_warehouse(warehouse)), ttl_s=ttl_s),
                            host="127.0.0.1", port=port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    return server, thread, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def warehouse(prefect_server):
    return generated_warehouse()


@pytest.fixture(scope="module")
def base_url(warehouse):
    server, thread, url = _start(warehouse, ttl_s=600)
    yield url
    server.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def specs(warehouse):
    return select_specs("true", None, warehouse)


def test_fifty_concurrent_sessions_keep_their_own_state(base_url, specs):
    # 50 sessions over 26 environments x 3 modes, half oracle, half default, all calls interleaved
    plans = []
    for index in range(50):
        spec = specs[index % len(specs)]
        mode = ("written", "revealed", "hidden")[index % 3]
        agent = oracle if index % 2 == 0 else default
        env = Environment(spec, mode)
        plans.append((spec.env_id, mode, list(agent(env)), 1.0 if agent is oracle else 0.0))
    client = httpx.Client(base_url=base_url, limits=httpx.Limits(max_connections=50))

    def create(plan):
        response = client.post("/sessions", json={"env_id": plan[0], "mode": plan[1]})
        assert response.status_code == 201, response.text
        return response.json()["session_id"]

    with ThreadPoolExecutor(50) as pool:
        sessions = list(pool.map(create, plans))
        assert len(set(sessions)) == 50
        longest = max(len(plan[2]) for plan in plans)
        for step in range(longest):  # every session advances one call per round, concurrently
            def advance(item, step=step):
                session, plan = item
                if step < len(plan[2]):
                    name, args = plan[2][step]
                    response = client.post(f"/sessions/{session}/call", json={"name": name, "arguments": args})
                    assert response.status_code == 200, response.text
                    assert response.json()["turns"] == step + 1
            list(pool.map(advance, zip(sessions, plans, strict=True)))
        scores = list(pool.map(lambda s: client.get(f"/sessions/{s}/score").json(), sessions))
    for (env_id, mode, script, expected), state in zip(plans, scores, strict=True):
        assert state["env_id"] == env_id and state["mode"] == mode
        assert state["turns"] == len(script) and state["score"] == expected
    client.close()


def test_a_session_lists_tools_plays_and_closes(base_url, specs):
    spec = specs[0]
    env = Environment(spec, "hidden")
    with httpx.Client(base_url=base_url) as client:
        created = client.post("/sessions", json={"env_id": spec.env_id, "mode": "hidden"}).json()
        assert created["tools"] == env.tools() and created["instructions"] == env.instructions
        session = created["session_id"]
        assert client.get(f"/sessions/{session}/tools").json()["tools"] == env.tools()
        first = client.post(f"/sessions/{session}/call", json={"name": env.tools()[0]["function"]["name"],
                                                                "arguments": {"nonsense": 1}}).json()
        assert "error" in first["observation"] and first["turns"] == 1  # an agent mistake: a turn, not a 4xx
        closed = client.delete(f"/sessions/{session}").json()
        assert closed["closed"] is True and closed["turns"] == 1


def _session(client, spec, mode="hidden"):
    return client.post("/sessions", json={"env_id": spec.env_id, "mode": mode}).json()["session_id"]


def test_unknown_env_id_is_404(base_url):
    response = httpx.post(f"{base_url}/sessions", json={"env_id": "knapsack-doesnotexist", "mode": "hidden"})
    assert response.status_code == 404 and "unknown environment id" in response.json()["detail"]


def test_unknown_mode_is_422(base_url, specs):
    response = httpx.post(f"{base_url}/sessions", json={"env_id": specs[0].env_id, "mode": "blind"})
    assert response.status_code == 422 and "unknown mode" in response.json()["detail"]


def test_unknown_tool_is_422_and_spends_no_turn(base_url, specs):
    with httpx.Client(base_url=base_url) as client:
        session = _session(client, specs[1])
        response = client.post(f"/sessions/{session}/call", json={"name": "launch_rocket", "arguments": {}})
        assert response.status_code == 422 and "unknown tool 'launch_rocket'" in response.json()["detail"]
        assert client.get(f"/sessions/{session}").json()["turns"] == 0


@pytest.mark.parametrize(("body", "message"), [
    (b'{"name": "x", "arguments": ', "not JSON"),
    (b'{"arguments": {}}', "string 'name'"),
    (b'["turns_left"]', "string 'name'"),
])
def test_malformed_requests_are_422(base_url, specs, body, message):
    with httpx.Client(base_url=base_url) as client:
        session = _session(client, specs[2])
        response = client.post(f"/sessions/{session}/call", content=body,
                               headers={"Content-Type": "application/json"})
        assert response.status_code == 422 and message in response.json()["detail"]


def test_malformed_arguments_are_422(base_url, specs):
    env = Environment(specs[3], "hidden")
    name = env.tools()[0]["function"]["name"]
    with httpx.Client(base_url=base_url) as client:
        session = _session(client, specs[3])
        response = client.post(f"/sessions/{session}/call", json={"name": name, "arguments": [1, 2]})
        assert response.status_code == 422 and "must be a JSON object" in response.json()["detail"]
        bad_create = client.post("/sessions", json={"mode": "hidden"})
        assert bad_create.status_code == 422 and "env_id" in bad_create.json()["detail"]


def test_calls_after_the_episode_ended_are_409(base_url, specs):
    spec = specs[4]
    script = list(oracle(Environment(spec, "written")))
    with httpx.Client(base_url=base_url) as client:
        session = _session(client, spec, "written")
        for name, args in script:
            assert client.post(f"/sessions/{session}/call", json={"name": name, "arguments": args}).json()["done"]
        response = client.post(f"/sessions/{session}/call", json={"name": script[0][0], "arguments": script[0][1]})
        assert response.status_code == 409 and "is over" in response.json()["detail"]
        assert client.get(f"/sessions/{session}/score").json()["score"] == 1.0


def test_a_closed_session_is_410_and_an_unknown_one_404(base_url, specs):
    with httpx.Client(base_url=base_url) as client:
        session = _session(client, specs[5])
        assert client.delete(f"/sessions/{session}").status_code == 200
        for method, path in [("GET", ""), ("GET", "/tools"), ("DELETE", ""), ("POST", "/call")]:
            response = client.request(method, f"/sessions/{session}{path}", json={"name": "x", "arguments": {}})
            assert response.status_code == 410 and "was closed" in response.json()["detail"]
        missing = client.get("/sessions/not-a-session/score")
        assert missing.status_code == 404 and "unknown session" in missing.json()["detail"]


def test_an_idle_session_expires_with_410(warehouse, specs):
    server, thread, url = _start(warehouse, ttl_s=0.5)
    try:
        with httpx.Client(base_url=url) as client:
            idle = _session(client, specs[6])
            busy = _session(client, specs[7])
            for _ in range(4):  # the busy session is used within its TTL and stays
                time.sleep(0.25)
                assert client.get(f"/sessions/{busy}").status_code == 200
            response = client.get(f"/sessions/{idle}/tools")
            assert response.status_code == 410 and "expired after 0.5 s idle" in response.json()["detail"]
    finally:
        server.should_exit = True
        thread.join(10)


def serve_cli(*argv: str, log) -> tuple[subprocess.Popen, str]:
    """`vhd <argv> --port P` as a user starts it, once it answers /health."""
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "cli.main", *argv, "--port", str(port)], cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        assert process.poll() is None and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.2)


def test_serve_envs_where_is_the_whole_world(warehouse, tmp_path):
    """An id outside --where is refused exactly as an id of no environment is; one inside still plays."""
    where = "family = 'knapsack'"
    inside, outside = select_specs(where, None, warehouse), select_specs(f"NOT ({where})", None, warehouse)
    assert inside and len(outside) > 10
    with open(tmp_path / "server.log", "w") as log:
        process, url = serve_cli("serve-envs", "--warehouse", warehouse, "--where", where, log=log)
    try:
        with httpx.Client(base_url=url) as client:
            unknown = client.post("/sessions", json={"env_id": "knapsack-doesnotexist", "mode": "hidden"})
            assert unknown.status_code == 404
            expected = unknown.json()["detail"].replace("knapsack-doesnotexist", "<id>")
            for spec in outside:
                refused = client.post("/sessions", json={"env_id": spec.env_id, "mode": "hidden"})
                assert refused.status_code == 404 and refused.json()["detail"].replace(spec.env_id, "<id>") == expected
            for spec in inside:
                created = client.post("/sessions", json={"env_id": spec.env_id, "mode": "revealed"})
                assert created.status_code == 201, created.text
                session = created.json()["session_id"]
                for name, args in oracle(Environment(spec, "revealed")):
                    client.post(f"/sessions/{session}/call", json={"name": name, "arguments": args})
                assert client.get(f"/sessions/{session}/score").json()["score"] == 1.0
    finally:
        process.terminate()
        process.wait(30)


@pytest.mark.parametrize("where, needle", [
    ("family = ", "--where does not parse as SQL"),
    ("no_such_column = 1", "no_such_column"),
])
def test_serve_envs_bad_where_gets_one_line(warehouse, where, needle):
    completed = subprocess.run([sys.executable, "-m", "cli.main", "serve-envs", "--warehouse", warehouse, "--where",
                                where], capture_output=True, text=True, timeout=120, cwd=ROOT)
    lines = [line for line in completed.stderr.splitlines() if line.strip()]
    assert completed.returncode == 2 and len(lines) == 1 and needle in lines[0], completed.stderr
