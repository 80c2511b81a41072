"""SessionStore (the store of `vhd serve-envs` and `vhd serve-openenv`) and the shared JSON-RPC dispatch, in process:
refusals are typed, each server maps the type to its code; held sessions do not expire; capacity is a type too."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from envs.agents import oracle
from envs.catalog import not_found
from envs.environment import Environment
from integrations.openenv_server import TaskRows, create_app
from serving.http import HTTP_STATUS
from serving.mcp_server import InvalidParams, dispatch
from serving.sessions import (
    BadRequest,
    CapacityReached,
    EpisodeOver,
    Gone,
    NotFound,
    SessionError,
    SessionStore,
    code_for,
)
from tests.support import make_spec


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.fixture(scope="module")
def spec():
    return make_spec("inventory_dp", 3)


def _loader(spec):
    def load(env_id):
        if env_id != spec.env_id:
            raise not_found(env_id)
        return spec
    return load


def test_refusals_are_typed_and_each_server_maps_the_type(spec):
    clock = Clock()
    store = SessionStore(_loader(spec), ttl_s=10, max_sessions=2, clock=clock)
    with pytest.raises(NotFound, match="unknown environment id"):
        store.spec("knapsack-nothere")
    with pytest.raises(BadRequest, match="unknown mode"):
        store.create(spec, "blind")
    session = store.create(spec, "hidden")
    with pytest.raises(BadRequest, match="unknown tool"):
        store.call(session.session_id, "no_such_tool", {})
    for name, args in oracle(Environment(spec, "hidden")):
        store.call(session.session_id, name, args)
    with pytest.raises(EpisodeOver):
        store.call(session.session_id, name, args)
    store.close(session.session_id)
    with pytest.raises(Gone, match="was closed"):
        store.get(session.session_id)
    store.create(spec, "hidden"), store.create(spec, "hidden")
    with pytest.raises(CapacityReached) as refused:
        store.create(spec, "hidden")
    assert code_for(refused.value, HTTP_STATUS) == 429
    assert [code_for(error, HTTP_STATUS) for error in (Gone("x"), NotFound("x"), BadRequest("x"))] == [410, 404, 422]


def test_a_held_session_does_not_expire_until_released(spec):
    clock = Clock()
    store = SessionStore(_loader(spec), ttl_s=10, clock=clock)
    held, idle = store.open(state="mine", held=True), store.open()
    assert held.env is None and held.state == "mine"
    clock.now = 100
    assert store.expire() == 1 and store.get(held.session_id) is held
    with pytest.raises(Gone, match="expired"):
        store.get(idle.session_id)
    with pytest.raises(BadRequest, match="already has an attached connection"):
        store.hold(held.session_id)
    store.release(held.session_id)
    clock.now = 111
    with pytest.raises(Gone, match="expired"):
        store.get(held.session_id)


def test_dispatch_answers_with_the_code_of_the_errors_type():
    def boom(params):
        raise BadRequest("no")

    methods = {"ok": lambda params: {"params": params}, "bad": boom}
    codes = {CapacityReached: -32000, SessionError: InvalidParams.code}
    assert dispatch({"id": 1, "method": "ok", "params": [1]}, methods, codes)["result"] == {"params": {}}
    assert dispatch({"id": 2, "method": "bad"}, methods, codes)["error"] == {"code": -32602, "message": "no"}
    assert dispatch({"id": 3, "method": "gone"}, methods, codes)["error"]["code"] == -32601
    assert dispatch([1], methods, codes)["error"]["code"] == -32600
    with pytest.raises(BadRequest):
        dispatch({"id": 4, "method": "bad"}, methods)  # a type no code is named for propagates


def test_the_openenv_server_codes_come_from_the_refusals_type(spec):
    tasks = TaskRows.from_rows([{"env_id": spec.env_id, "split": spec.split}], ("hidden",))
    client = TestClient(create_app(_loader(spec), tasks, max_sessions=1))
    assert client.post("/vhdplay/num_tasks", json={"split": "nope"}).status_code == 404
    assert client.post("/vhdplay/task", json={"split": spec.split, "index": 5}).status_code == 400
    created = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}).json()
    sid = created["result"]["session_id"]
    again = client.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "openenv/session/create"}).json()
    assert again["error"]["code"] == -32000  # at capacity
    early = client.post("/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "tools/list",
                                      "params": {"session_id": sid}}).json()
    assert early["error"] == {"code": -32602, "message": "no episode yet: send reset first"}
    with client.websocket_connect(f"/ws?session_id={sid}") as ws:
        def send(message):
            ws.send_text(message if isinstance(message, str) else json.dumps(message))
            return json.loads(ws.receive_text())

        assert send({"type": "step", "data": {"type": "list_tools"}})["data"]["code"] == "EXECUTION_ERROR"
        outside = send({"type": "reset", "data": {"env_id": "knapsack-nothere"}})["data"]
        assert outside["code"] == "VALIDATION_ERROR" and "unknown environment id" in outside["message"]
        assert send("{")["data"]["code"] == "INVALID_JSON"
        assert send({"type": "nope"})["data"]["code"] == "UNKNOWN_TYPE"
        assert send({"type": "reset", "data": {"seed": 0}})["type"] == "observation"
    assert client.get("/health").json()["sessions"] == 1  # released, not closed: it was created over /mcp
    closed = client.post("/mcp", json={"jsonrpc": "2.0", "id": 4, "method": "openenv/session/close",
                                       "params": {"session_id": sid}}).json()
    assert closed["result"] == {"session_id": sid, "closed": True}
    with client.websocket_connect("/ws") as ws:
        ws.send_text(json.dumps({"type": "state"}))
        assert json.loads(ws.receive_text())["type"] == "state"
    assert client.get("/health").json()["sessions"] == 0
