"""Hostile requests to the HTTP and MCP servers: size limits, unknown fields, malformed JSON-RPC, huge integers.

Real servers: uvicorn on a port (HTTP, raw sockets where the test is about bytes on the wire) and `vhd serve-mcp`
as a subprocess (the MCP Python client, and raw lines where the test is about malformed ones).
"""

from __future__ import annotations

import json
import queue
import select
import socket
import subprocess
import threading
import time

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from serving.http import MAX_BODY_BYTES
from tests.cli.test_cli import VHD, vhd
from tests.cli.test_hostile_values import land_specs
from tests.serving.test_http import _start
from tests.support import make_spec

HUGE = 10**30
DIGITS_5000 = "9" * 5000


@pytest.fixture(scope="module")
def spec():
    return make_spec("inventory_dp", 3)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory, spec):
    return land_specs(str(tmp_path_factory.mktemp("hostile-serving") / "wh"), [spec])


@pytest.fixture(scope="module")
def base_url(warehouse):
    server, thread, url = _start(warehouse, ttl_s=600)
    yield url
    server.should_exit = True
    thread.join(10)


def _order_tool(spec) -> tuple[str, str]:
    """The order tool's name and its argument's name."""
    tool = next(t for t in spec.rendering.tools if t.operation == "place_order")
    return tool.name, next(iter(tool.parameters["properties"]))


def _session(client, spec) -> str:
    return client.post("/sessions", json={"env_id": spec.env_id, "mode": "hidden"}).json()["session_id"]


def _raw(url: str, head: bytes, body_chunks=(), chunk_wait: float = 0.0) -> tuple[bytes, int]:
    """Send a request by hand; the response's bytes and how many body bytes went out before it came."""
    host, port = url.removeprefix("http://").split(":")
    sent = 0
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head)
        for chunk in body_chunks:
            if select.select([sock], [], [], chunk_wait)[0]:
                break  # the server answered before the body ended
            try:
                sock.sendall(chunk)
            except OSError:  # the server closed the connection
                break
            sent += len(chunk)
        answer = b""
        while True:
            try:
                data = sock.recv(65536)
            except OSError:
                break
            if not data:
                break
            answer += data
    return answer, sent


def _detail(answer: bytes) -> tuple[int, str]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)["detail"]


# --- HTTP: size limits --------------------------------------------------------------------------------------------

def test_a_declared_100_mb_body_is_refused_before_it_is_read(base_url):
    started = time.monotonic()
    answer, _ = _raw(base_url, b"POST /sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                               b"Content-Length: 104857600\r\n\r\n", [b'{"env_id": '])
    status, detail = _detail(answer)
    assert status == 413 and detail == f"request body too large: the limit is {MAX_BODY_BYTES:,} bytes"
    assert time.monotonic() - started < 10  # answered without waiting for 100 MB that never came


def test_a_streamed_body_is_refused_once_it_passes_the_limit(base_url):
    chunk = b"x" * 65536
    framed = b"%x\r\n%s\r\n" % (len(chunk), chunk)
    answer, sent = _raw(base_url, b"POST /sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                  b"Transfer-Encoding: chunked\r\n\r\n", [framed] * 1600, chunk_wait=0.001)  # 100 MiB
    status, detail = _detail(answer)
    assert status == 413 and "too large" in detail
    assert sent < 20 * MAX_BODY_BYTES  # the server stopped reading soon after the limit, not at 100 MiB


def test_a_body_over_the_limit_is_413_through_httpx_too(base_url, spec):
    with httpx.Client(base_url=base_url) as client:
        session = _session(client, spec)
        big = {"name": "turns_left", "arguments": {"pad": "x" * (MAX_BODY_BYTES + 1)}}
        response = client.post(f"/sessions/{session}/call", json=big)
        assert response.status_code == 413 and response.json()["detail"].startswith("request body too large")

        def streamed():
            for _ in range(40):
                yield b" " * 65536
        response = client.post(f"/sessions/{session}/call", content=streamed())
        assert response.status_code == 413
        assert client.get(f"/sessions/{session}").json()["turns"] == 0  # neither spent a turn


def test_a_body_under_the_limit_is_served(base_url, spec):
    response = httpx.post(f"{base_url}/sessions", json={"env_id": "x" * (MAX_BODY_BYTES - 100), "mode": "hidden"})
    assert response.status_code == 404 and "unknown environment id" in response.json()["detail"]


# --- HTTP: unknown fields -----------------------------------------------------------------------------------------

def test_unknown_fields_are_422_naming_the_field(base_url, spec):
    with httpx.Client(base_url=base_url) as client:
        created = client.post("/sessions", json={"env_id": spec.env_id, "mode": "hidden", "moed": "written"})
        assert created.status_code == 422
        assert created.json()["detail"] == "malformed request: unknown field 'moed'; the body takes 'env_id', 'mode'"
        session = _session(client, spec)
        called = client.post(f"/sessions/{session}/call", json={"name": "turns_left", "arguments": {},
                                                                 "argumnets": {"x": 1}})
        assert called.status_code == 422
        assert called.json()["detail"] == ("malformed request: unknown field 'argumnets'; the body takes 'name', "
                                           "'arguments'")
        assert client.get(f"/sessions/{session}").json()["turns"] == 0


@pytest.mark.parametrize(("body", "named"), [
    (b'{"env_id": ' + DIGITS_5000.encode() + b'}', "env_id must be a string"),
    (b'{"env_id": "x", "mode": "hidden", "pad": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nest more than 72 deep"),
    (b'{"env_id": "\xff\xfe"}', "is not UTF-8 text"),
    (b'{"env_id": ', "is not JSON"),
    (b'["env_id"]', "must be a JSON object"),
    (b'{"mode": "hidden"}', "has no env_id"),
])
def test_a_hostile_session_body_is_one_line_naming_the_limit(base_url, spec, body, named):
    with httpx.Client(base_url=base_url) as client:
        created = client.post("/sessions", content=body, headers={"content-type": "application/json"})
        assert created.status_code == 422, created.text
        detail = created.json()["detail"]
        assert named in detail and "\n" not in detail and detail.startswith("malformed request: ")
        assert client.post("/sessions", json={"env_id": spec.env_id}).status_code == 201  # the server goes on


# --- HTTP: huge integers are the environment's business -------------------------------------------------------

@pytest.mark.parametrize("value", [str(HUGE), "-" + str(HUGE), DIGITS_5000, "1e400"])
def test_a_huge_integer_argument_is_an_error_observation_over_http(base_url, spec, value):
    tool, argument = _order_tool(spec)
    with httpx.Client(base_url=base_url) as client:
        session = _session(client, spec)
        response = client.post(f"/sessions/{session}/call", headers={"Content-Type": "application/json"},
                               content=f'{{"name": "{tool}", "arguments": {{"{argument}": {value}}}}}')
        assert response.status_code == 200, response.text
        answer = response.json()
        assert answer["turns"] == 1 and answer["done"] is False  # spent like any agent mistake
        assert f"argument '{argument}' must be" in answer["observation"]["error"]
        assert ("1,000 or more digits" in answer["observation"]["error"]) == (value == DIGITS_5000)


def test_http_answers_are_strict_json(base_url, spec):
    with httpx.Client(base_url=base_url) as client:
        session = _session(client, spec)
        response = client.post(f"/sessions/{session}/call", json={"name": "calculator",
                                                                   "arguments": {"expression": "1e308 * 10"}})
        assert response.status_code == 200
        assert "not a finite number" in json.loads(response.text, parse_constant=_refuse)["observation"]["error"]


def _refuse(name):
    raise AssertionError(f"invalid JSON constant {name}")


# --- MCP ----------------------------------------------------------------------------------------------------------

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def _mcp_lines(warehouse: str, env_id: str, lines: list[str], wait_s: float = 60) -> list[dict]:
    """Send raw lines to `vhd serve-mcp` after the handshake, input left open; every answer (one JSON object per
    line) until one per request came, or none came for `wait_s` (a line never answered)."""
    text = "\n".join([json.dumps(INIT), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                      *lines]) + "\n"
    process = subprocess.Popen([VHD, "serve-mcp", env_id, "--warehouse", warehouse], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    process.stdin.write(text)
    process.stdin.flush()
    received: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [received.put(line) for line in process.stdout], daemon=True).start()
    answers = []
    expected = 1 + len([line for line in lines if line.strip() and '"notifications/' not in line])
    while len(answers) < expected:
        try:
            line = received.get(timeout=wait_s)
        except queue.Empty:
            break
        answers.append(json.loads(line, parse_constant=_refuse))
    process.stdin.close()
    stderr = process.stderr.read()
    assert process.wait(30) == 0, stderr
    assert "Traceback" not in stderr and "ERROR" not in stderr, stderr
    return answers


def test_malformed_json_rpc_lines_get_the_protocol_errors(warehouse, spec):
    tool, argument = _order_tool(spec)
    call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "turns_left", "arguments": {}}}
    answers = _mcp_lines(warehouse, spec.env_id, [
        "this is not json", '{"jsonrpc": "2.0", "id": 1, "method": ', "[" * 100_000,
        '{"jsonrpc": "2.0", "id": 7}', "[1, 2]", '{"id": "abc", "method": 3}', json.dumps(call)])
    init, *errors, result = answers
    assert init["id"] == 0 and "result" in init
    assert [(e["id"], e["error"]["code"]) for e in errors] == [
        (None, -32700), (None, -32700), (None, -32700), (7, -32600), (None, -32600), ("abc", -32600)]
    assert errors[0]["error"]["message"].startswith("Parse error: the line is not JSON")
    assert result["id"] == 9 and not result["result"]["isError"]  # the server still serves after them


def test_a_huge_integer_over_mcp_is_the_environments_error(warehouse, spec):
    tool, argument = _order_tool(spec)
    calls = [f'{{"jsonrpc": "2.0", "id": {i}, "method": "tools/call", "params": {{"name": "{tool}", '
             f'"arguments": {{"{argument}": {value}}}}}}}' for i, value in enumerate([DIGITS_5000, "-" + DIGITS_5000,
                                                                                      str(HUGE)], start=1)]
    init, *results = _mcp_lines(warehouse, spec.env_id, calls)
    for result, shown in zip(results, ["an integer of 1,000 or more digits", "an integer of 1,000 or more digits",
                                       str(HUGE)], strict=True):
        assert result["result"]["isError"] is True
        error = json.loads(result["result"]["content"][0]["text"])["error"]
        assert error.startswith(f"argument '{argument}' must be between") and error.endswith(f"got {shown}"), error
        assert "numpy" not in error and "isfinite" not in error


async def _client_call(warehouse, env_id, name, arguments):
    params = StdioServerParameters(command=VHD, args=["serve-mcp", env_id, "--warehouse", warehouse])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        first = await session.call_tool(name, arguments)
        second = await session.call_tool("turns_left", {})
        return first, second


def test_the_mcp_client_gets_the_error_result_of_a_huge_integer(warehouse, spec):
    tool, argument = _order_tool(spec)
    first, second = anyio.run(_client_call, warehouse, spec.env_id, tool, {argument: HUGE})
    assert first.is_error and f"argument '{argument}' must be between" in first.content[0].text
    assert not second.is_error and json.loads(second.content[0].text)["turns_left"] == spec.turn_budget - 2


# --- vhd play --agent human ---------------------------------------------------------------------------------------

def test_human_play_survives_huge_integers_and_broken_json(warehouse, spec):
    tool, argument = _order_tool(spec)
    typed = [f'{tool} {{"{argument}": {value}}}' for value in (HUGE, DIGITS_5000, "1e400", "NaN")]
    typed += [f'{tool} {{"{argument}": ' + "[" * 100_000, "turns_left"]
    result = vhd("play", spec.env_id, "--agent", "human", "--warehouse", warehouse, input="\n".join(typed) + "\n",
                 timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and result.stderr == ""
    assert result.stdout.count(f"argument '{argument}' must be") == 4
    assert "arguments nest lists or objects too deeply" in result.stdout
    assert f'"turns_left": {spec.turn_budget - 6}' in result.stdout  # 6 turns spent, this one included


def _mcp_until_eof(warehouse: str, env_id: str, lines: list[str]) -> list[dict]:
    """Pipe the handshake and `lines` into `vhd serve-mcp`, then end of input at once; every answer it gave."""
    text = "\n".join([json.dumps(INIT), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                      *lines]) + "\n"
    result = subprocess.run([VHD, "serve-mcp", env_id, "--warehouse", warehouse], input=text, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "ERROR" not in result.stderr, result.stderr
    return [json.loads(line, parse_constant=_refuse) for line in result.stdout.splitlines()]


def test_every_request_piped_before_end_of_input_is_answered(warehouse, spec):
    pings = [json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}) for i in range(1, 6)]
    calls = [json.dumps({"jsonrpc": "2.0", "id": f"call-{i}", "method": "tools/call",
                         "params": {"name": "turns_left", "arguments": {}}}) for i in range(5)]
    answers = _mcp_until_eof(warehouse, spec.env_id, pings + calls)
    assert sorted(map(str, (a["id"] for a in answers))) == sorted(
        ["0", "1", "2", "3", "4", "5"] + [f"call-{i}" for i in range(5)])
    assert all("result" in a for a in answers)
    left = sorted(json.loads(a["result"]["content"][0]["text"])["turns_left"] for a in answers
                  if str(a["id"]).startswith("call-"))
    assert left == [spec.turn_budget - n for n in range(5, 0, -1)]  # each call was served, once


def test_an_id_of_5000_digits_is_refused_with_a_null_id_and_a_long_one_is_kept(warehouse, spec):
    long_id = "9" * 999
    answers = _mcp_lines(warehouse, spec.env_id, [
        f'{{"jsonrpc": "2.0", "id": {DIGITS_5000}, "method": "ping"}}',
        f'{{"jsonrpc": "2.0", "id": -{DIGITS_5000}, "method": "ping"}}',
        f'{{"jsonrpc": "2.0", "id": {long_id}, "method": "ping"}}'], wait_s=20)
    init, huge, negative, kept = answers
    for refused in (huge, negative):
        assert refused["id"] is None and refused["error"]["code"] == -32600
        assert "the id must be a string or an integer of fewer than 1,000 digits" in refused["error"]["message"]
    assert kept["id"] == int(long_id) and kept["result"] == {}


@pytest.mark.parametrize("bad_id", ['{"a": 1}', "[1]", "null", "1.5", "true"])
def test_a_request_whose_id_is_not_a_string_or_integer_is_an_invalid_request(warehouse, spec, bad_id):
    answers = _mcp_lines(warehouse, spec.env_id, [f'{{"jsonrpc": "2.0", "id": {bad_id}, "method": "ping"}}',
                                                  json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"})],
                         wait_s=20)
    init, refused, served = answers
    assert refused["id"] is None and refused["error"]["code"] == -32600, refused
    assert served == {"jsonrpc": "2.0", "id": 3, "result": {}}


# --- `vhd serve-openenv`: WebSocket frames and /mcp bodies through schemas.payload's guard -----------------------

@pytest.fixture(scope="module")
def tampered_rows(tmp_path_factory, spec):
    """A warehouse holding `spec` and three rows that fail the catalog's checks on load: a spec edited after landing
    (another id), text that is not a spec, and a spec of an unknown family stored under the hash of its own text
    (the hash check passes, the parse does not)."""
    import hashlib

    from tests.warehouse.test_landing import DATE, environments_frame
    from warehouse.landing import commit_run, land
    from warehouse.location import resolve_warehouse

    edited = json.loads(make_spec("lp", 1).canonical_json())
    edited["turn_budget"] += 1
    unknown = json.loads(make_spec("knapsack", 2).canonical_json())
    unknown["family"] = "nosuch"
    unknown_text = json.dumps(unknown, sort_keys=True, separators=(",", ":"))
    rows = {spec.env_id: spec.canonical_json(), make_spec("lp", 1).env_id: json.dumps(edited),
            "qp-0123456789abcdef": "{not a spec",
            f"nosuch-{hashlib.sha256(unknown_text.encode()).hexdigest()[:16]}": unknown_text}
    frame = environments_frame(list(rows)).assign(family=[env_id.rsplit("-", 1)[0] for env_id in rows],
                                                  spec_json=list(rows.values()))
    wh = resolve_warehouse(str(tmp_path_factory.mktemp("tampered") / "wh"))
    commit_run(wh, "run-a", DATE, {"environments": [land(wh, "environments", frame, DATE, "s1")]}, {})
    return wh.url, [env_id for env_id in rows if env_id != spec.env_id]


@pytest.fixture(scope="module")
def openenv_url(tampered_rows, tmp_path_factory):
    from tests.serving.test_http import serve_cli

    log_path = tmp_path_factory.mktemp("openenv-log") / "server.log"
    with open(log_path, "w") as log:
        process, url = serve_cli("serve-openenv", "--warehouse", tampered_rows[0], log=log)
    yield url
    process.terminate()
    process.wait(30)
    logged = log_path.read_text()
    assert "Traceback" not in logged and "ERROR" not in logged, logged


def _ws(url: str):
    from websockets.sync.client import connect

    return connect(url.replace("http://", "ws://") + "/ws", open_timeout=30, close_timeout=5)


def _answer(ws) -> dict:
    return json.loads(ws.recv(timeout=30), parse_constant=_refuse)


def test_hostile_websocket_frames_get_an_error_on_the_same_session(openenv_url, spec):
    tool, argument = _order_tool(spec)
    with _ws(openenv_url) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"env_id": spec.env_id}}))
        episode = _answer(ws)["data"]["observation"]
        assert episode["env_id"] == spec.env_id
        refused = []
        for frame in [b'{"type": "state"}',  # a binary frame
                      "[" * 100_000,  # nested too deeply to read
                      '{"type": "step", "data": ' + "[" * 200 + "]" * 200 + "}",  # reads, but past the depth limit
                      '{"type": "step", "data": ' + "{" * 50_000]:
            ws.send(frame)
            answer = _answer(ws)
            refused.append(answer)
            assert answer["type"] == "error" and "\n" not in answer["data"]["message"], answer
        assert refused[0]["data"] == {"code": "INVALID_JSON", "message": "Parse error: a binary frame; send each "
                                                                         "message as a JSON text frame"}
        assert "lists or objects nest more than 72 deep" in refused[1]["data"]["message"]
        assert "lists or objects nest more than 72 deep" in refused[2]["data"]["message"]
        # a 5,000-digit integer is the environment's error, a turn spent
        ws.send(f'{{"type": "step", "data": {{"type": "call_tool", "tool_name": "{tool}", '
                f'"arguments": {{"{argument}": {DIGITS_5000}}}}}}}')
        step = _answer(ws)["data"]
        assert "an integer of 1,000 or more digits" in step["observation"]["result"]["data"]["error"]
        ws.send(json.dumps({"type": "state"}))
        state = _answer(ws)["data"]
        assert state["env_id"] == spec.env_id and state["turns"] == 1 and state["step_count"] == 1


def test_a_reset_on_a_broken_catalog_row_is_an_error_and_the_session_goes_on(openenv_url, tampered_rows, spec):
    _, broken = tampered_rows
    with _ws(openenv_url) as ws:
        for env_id in broken:
            ws.send(json.dumps({"type": "reset", "data": {"env_id": env_id}}))
            answer = _answer(ws)
            assert answer["type"] == "error" and answer["data"]["code"] == "EXECUTION_ERROR", answer
            message = answer["data"]["message"]
            assert env_id in message and "\n" not in message, message
        ws.send(json.dumps({"type": "reset", "data": {"env_id": spec.env_id}}))
        assert _answer(ws)["data"]["observation"]["env_id"] == spec.env_id


def test_serve_envs_answers_a_broken_catalog_row_in_one_line(tampered_rows, spec):
    """The same rows through `vhd serve-envs`: 503 with one line naming the environment (not a 500 traceback), and
    the server goes on serving the good one."""
    url_of_warehouse, broken = tampered_rows
    server, thread, url = _start(url_of_warehouse, ttl_s=600)
    try:
        with httpx.Client(base_url=url) as client:
            for env_id in broken:
                response = client.post("/sessions", json={"env_id": env_id, "mode": "hidden"})
                assert response.status_code == 503, response.text
                assert env_id in response.json()["detail"] and "\n" not in response.json()["detail"]
            assert _session(client, spec)
    finally:
        server.should_exit = True
        thread.join(10)


def _mcp_post(url: str, body: bytes) -> dict:
    response = httpx.post(f"{url}/mcp", content=body, headers={"Content-Type": "application/json"}, timeout=60)
    assert response.status_code == 200, response.text
    return json.loads(response.text, parse_constant=_refuse)


def test_openenv_mcp_answers_json_rpc_errors_to_hostile_bodies(openenv_url):
    not_utf8 = _mcp_post(openenv_url, b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list\xff\xfe"}')
    assert not_utf8["id"] is None and not_utf8["error"]["code"] == -32700
    assert not_utf8["error"]["message"] == "Parse error: the body is not UTF-8 text (byte 49)"
    unreadable = _mcp_post(openenv_url, b"[" * 100_000)
    assert unreadable["error"]["code"] == -32700 and "lists or objects nest" in unreadable["error"]["message"]
    deep = _mcp_post(openenv_url, ('{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"arguments": '
                                   + "[" * 300 + "]" * 300 + "}}").encode())
    assert (deep["id"], deep["error"]["code"]) == (5, -32600)
    digits = _mcp_post(openenv_url, f'{{"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": '
                                    f'{{"session_id": {DIGITS_5000}}}}}'.encode())
    assert digits["id"] == 6 and "missing session_id" in digits["error"]["message"]


def test_openenv_mcp_refuses_a_50_mib_body_without_reading_it(openenv_url):
    started = time.monotonic()
    answer, _ = _raw(openenv_url, b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                  b"Content-Length: 52428800\r\n\r\n", [b'{"jsonrpc": "2.0", '])
    status, detail = _detail(answer)
    assert status == 413 and detail == f"request body too large: the limit is {MAX_BODY_BYTES:,} bytes"
    assert time.monotonic() - started < 10
    chunk = b" " * 65536
    framed = b"%x\r\n%s\r\n" % (len(chunk), chunk)
    answer, sent = _raw(openenv_url, b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                     b"Transfer-Encoding: chunked\r\n\r\n", [framed] * 800, chunk_wait=0.001)
    assert _detail(answer)[0] == 413
    assert sent < 20 * MAX_BODY_BYTES  # stopped soon after the limit, not at 50 MiB


# --- serve-envs and serve-mcp: the same guard -----------------------------------------------------------------

def test_a_call_body_past_the_depth_limit_names_the_limit(base_url, spec):
    with httpx.Client(base_url=base_url) as client:
        session = _session(client, spec)
        for body in ("[" * 100_000, '{"name": "turns_left", "arguments": {"a": ' + "[" * 200 + "]" * 200 + "}}"):
            response = client.post(f"/sessions/{session}/call", content=body)
            assert response.status_code == 422
            assert response.json()["detail"].startswith("malformed request: lists or objects nest more than 72 "
                                                        "deep in the body")
        response = client.post(f"/sessions/{session}/call", content=b'{"name": "\xff"}')
        assert response.status_code == 422 and "not UTF-8 text" in response.json()["detail"]
        assert client.get(f"/sessions/{session}").json()["turns"] == 0


def test_mcp_lines_nested_past_the_limit_or_over_the_size_are_answered(warehouse, spec):
    deep = [f'{{"jsonrpc": "2.0", "id": {depth}, "method": "tools/call", "params": {{"name": "turns_left", '
            f'"arguments": {{"x": {"[" * depth}{"]" * depth}}}}}}}' for depth in (250, 500, 900)]
    big = json.dumps({"jsonrpc": "2.0", "id": 50, "method": "tools/call",
                      "params": {"name": "turns_left", "arguments": {"x": "y" * (3 << 20)}}})
    answers = _mcp_lines(warehouse, spec.env_id, [*deep, big, json.dumps({"jsonrpc": "2.0", "id": 99,
                                                                          "method": "ping"})], wait_s=30)
    init, *refused, served = answers
    assert [(a["id"], a["error"]["code"]) for a in refused] == [(250, -32600), (500, -32600), (900, -32600),
                                                                (None, -32600)]
    assert all("lists or objects nest more than 72 deep" in a["error"]["message"] for a in refused[:3])
    assert refused[3]["error"]["message"].startswith("Invalid Request: the line is over the limit of 1,048,576")
    assert served == {"jsonrpc": "2.0", "id": 99, "result": {}}
