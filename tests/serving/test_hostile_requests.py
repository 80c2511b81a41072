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
