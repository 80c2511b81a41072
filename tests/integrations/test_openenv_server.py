"""`vhd serve-openenv` played by OpenEnv's own clients (openenv 0.10: MCPToolClient, GenericEnvClient, its manifest
parser), run in the openenv sidecar against a real uvicorn server over a generated catalog."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest
import uvicorn

from envs.agents import oracle, play
from envs.catalog import load_spec
from envs.environment import Environment
from integrations.openenv_server import STATE_SCHEMA, TaskRows, create_app
from schemas.envspec import MODES
from tests.evaluation.support import generated_warehouse
from tests.integrations.support import ROOT, run_in_sidecar
from warehouse.location import resolve_warehouse


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start(warehouse: str, max_sessions: int):
    wh = resolve_warehouse(warehouse)
    tasks = TaskRows.from_catalog(wh, "true", MODES)
    app = create_app(lambda env_id: load_spec(env_id, wh), tasks, max_sessions=max_sessions)
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    return server, thread, f"http://127.0.0.1:{port}", tasks


@pytest.fixture(scope="module")
def warehouse(prefect_server):
    return generated_warehouse()


@pytest.fixture(scope="module")
def served(warehouse):
    server, thread, url, tasks = _start(warehouse, max_sessions=200)
    yield url, tasks
    server.should_exit = True
    thread.join(10)


def _env_of(task: dict) -> Environment:
    return Environment(load_spec(task["env_id"], generated_warehouse()), task["mode"])


EPISODE = """
import asyncio, json, sys
from openenv.core.mcp_client import MCPToolClient
from openenv.core.env_server.mcp_types import CallToolAction

async def main(p):
    async with MCPToolClient(base_url=p["url"]) as env:
        first = await env.reset(split=p["split"], index=p["index"])
        tools = [t.name for t in await env.list_tools()]
        probe = await env.call_tool(p["probe"][0], **p["probe"][1])   # over HTTP /mcp, the same session
        steps = []
        for name, args in p["actions"]:
            result = await env.step(CallToolAction(tool_name=name, arguments=args))
            steps.append({"reward": result.reward, "done": result.done,
                          "observation": result.observation.result["data"]})
            if result.done:
                break
        state = await env.state()
        return {"env_id": first.observation.env_id, "mode": first.observation.mode, "tools": tools,
                "probe": probe, "steps": steps, "step_count": state.step_count}

print(json.dumps(asyncio.run(main(json.load(sys.stdin)))))
"""


@pytest.mark.parametrize("mode", MODES)
def test_openenv_client_plays_an_episode_to_its_reward(served, mode):
    url, tasks = served
    split = "train"
    families = {}
    for task in tasks.splits[split]:
        if task["mode"] == mode:
            families.setdefault(task["family"], task)
    assert len(families) >= 10
    for family in ("knapsack", "inventory_dp", "routing"):
        task = families[family]
        env = _env_of(task)
        expected = play(_env_of(task), "oracle")
        calculator = next(t for t in env.tool_specs() if t.operation == "calculator")
        probe = [calculator.name, {next(iter(calculator.parameters["properties"])): "6 * 7"}]
        probed = env.step(*probe)  # the client's call_tool probe spends a turn too
        actions = list(oracle(env))
        answer = run_in_sidecar("openenv", EPISODE, {"url": url, "split": split, "index": task["index"],
                                                      "actions": actions, "probe": probe})
        assert (answer["env_id"], answer["mode"]) == (task["env_id"], mode)
        assert sorted(answer["tools"]) == sorted(env.tool_names)
        assert answer["probe"] == probed and "error" not in probed
        steps = answer["steps"]
        assert steps[-1]["done"] and all(not s["done"] for s in steps[:-1])
        assert steps[-1]["reward"] == pytest.approx(expected.score)  # the score, on the final step
        assert all(s["reward"] == 0.0 for s in steps[:-1])
        assert expected.score == pytest.approx(1.0)
        assert answer["step_count"] == len(steps) + 1


CONCURRENT = """
import asyncio, json, random, sys
from openenv import GenericEnvClient

async def one(p, k, plan):
    async with GenericEnvClient(base_url=p["url"]) as env:
        await env.reset(split=plan["split"], index=plan["index"])
        observations = []
        for name, args in plan["actions"]:
            await asyncio.sleep(random.random() / 100)   # interleave the sessions' steps
            result = await env.step({"type": "call_tool", "tool_name": name, "arguments": args})
            observations.append([result.observation["result"]["data"], result.reward, result.done])
        state = await env.state()
        return {"observations": observations, "state": state if isinstance(state, dict) else state.model_dump()}

async def main(p):
    return await asyncio.gather(*(one(p, k, plan) for k, plan in enumerate(p["plans"])))

print(json.dumps(asyncio.run(main(json.load(sys.stdin)))))
"""


def test_64_concurrent_openenv_sessions_stay_isolated(served):
    url, tasks = served
    rows = [t for t in tasks.splits["train"] if t["mode"] in ("hidden", "revealed")]
    plans, expected = [], []
    for k in range(64):
        task = rows[(k * 7) % len(rows)]
        env = _env_of(task)
        actions = list(oracle(_env_of(task)))
        actions = actions[: 1 + k % len(actions)]  # sessions on the same environment stop at different points
        plans.append({"split": "train", "index": task["index"], "actions": actions})
        observations = []
        for name, args in actions:
            observation = env.step(name, args)
            done = env.done
            observations.append([observation, env.score() if done else 0.0, done])
        expected.append((observations, env.turns, env.score()))
    answers = run_in_sidecar("openenv", CONCURRENT, {"url": url, "plans": plans})
    assert len(answers) == 64
    for answer, (observations, turns, score) in zip(answers, expected, strict=True):
        assert answer["observations"] == observations
        assert answer["state"]["turns"] == turns
        assert answer["state"]["score"] == pytest.approx(score)
    assert httpx.get(f"{url}/health").json()["sessions"] == 0  # every session closed with its connection


CAPACITY = """
import asyncio, json, sys
from openenv import GenericEnvClient

async def main(p):
    first, second = GenericEnvClient(base_url=p["url"]), GenericEnvClient(base_url=p["url"])
    await first.reset(split="train", index=0)
    try:
        await second.reset(split="train", index=0)
        refused = None
    except Exception as error:
        refused = str(error)
    await first.close()
    return {"refused": refused}

print(json.dumps(asyncio.run(main(json.load(sys.stdin)))))
"""


def test_one_session_over_capacity_is_refused_with_one_line(warehouse):
    server, thread, url, _ = _start(warehouse, max_sessions=1)
    try:
        answer = run_in_sidecar("openenv", CAPACITY, {"url": url})
    finally:
        server.should_exit = True
        thread.join(10)
    assert "CAPACITY_REACHED" in answer["refused"] and "\n" not in answer["refused"]


def test_task_api_maps_splits_to_catalog_rows(served, warehouse):
    url, tasks = served
    from envs.catalog import select_specs

    specs = select_specs("true", None, warehouse)
    assert httpx.get(f"{url}/list_environments").json() == ["vhdplay"]
    splits = httpx.get(f"{url}/vhdplay/splits").json()
    assert [s["name"] for s in splits] == ["train"]
    count = httpx.post(f"{url}/vhdplay/num_tasks", json={"split": "train"}).json()["num_tasks"]
    assert count == len(specs) * len(MODES)
    task = httpx.post(f"{url}/vhdplay/task", json={"split": "train", "index": 4}).json()["task"]
    assert task["reset"] == {"split": "train", "index": 4}
    spec = next(s for s in specs if s.env_id == task["env_id"])
    assert (task["family"], task["u0"], task["u_star"]) == (spec.family, spec.reference.u0, spec.reference.u_star)
    assert task["tier"] == spec.difficulty.tier  # the warehouse's tier column, under the same name
    page = httpx.post(f"{url}/vhdplay/task_range", json={"split": "train", "start": 3, "stop": 6}).json()["tasks"]
    assert [t["index"] for t in page] == [3, 4, 5]
    bad = httpx.post(f"{url}/vhdplay/task", json={"split": "train", "index": count})
    assert bad.status_code == 400 and "outside split" in bad.json()["detail"]
    unknown = httpx.post(f"{url}/vhdplay/num_tasks", json={"split": "nope"})
    assert unknown.status_code == 404 and "\n" not in unknown.json()["detail"]
    schema = httpx.get(f"{url}/schema").json()
    assert schema["action"]["title"] == "CallToolAction"


def test_openenv_manifest_parses_with_openenvs_own_parser():
    answer = run_in_sidecar("openenv", """
import json
from openenv.validation.parsers.openenv_yaml import OpenEnvYamlParser
import sys
m = OpenEnvYamlParser().parse(json.load(sys.stdin)["folder"])
print(json.dumps({"name": m.name, "range": list(m.reward.range)}))
""", {"folder": str(ROOT / "integrations")})
    assert answer == {"name": "vhdplay", "range": [0.0, 1.0]}


@pytest.mark.parametrize("argv, needle", [
    (["--port", "0"], "--port must be 1-65535"),
    (["--max-sessions", "0"], "--max-sessions must be at least 1"),
    (["--mode", "blind"], "unknown mode 'blind'"),
    (["--where", "family = "], "--where does not parse as SQL"),
])
def test_serve_openenv_bad_input_gets_one_line(warehouse, argv, needle):
    completed = subprocess.run([sys.executable, "-m", "cli.main", "serve-openenv", "--warehouse", warehouse, *argv],
                               capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert completed.returncode != 0
    lines = [line for line in completed.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0], completed.stderr


SCOPED = """
import asyncio, json, sys
from openenv import GenericEnvClient

async def refusal(env, **reset):
    try:
        await env.reset(**reset)
    except Exception as error:
        return str(error)
    return None

async def main(p):
    async with GenericEnvClient(base_url=p["url"]) as env:
        unknown = await refusal(env, env_id=p["unknown"], mode="hidden")
        outside = {env_id: await refusal(env, env_id=env_id, mode="hidden") for env_id in p["outside"]}
        first = await env.reset(env_id=p["inside"], mode="revealed")
        for name, args in p["actions"]:
            result = await env.step({"type": "call_tool", "tool_name": name, "arguments": args})
        listed = [await env.reset(seed=seed) for seed in range(p["rows"])]
        return {"unknown": unknown, "outside": outside, "env_id": first.observation["env_id"],
                "reward": result.reward, "done": result.done,
                "listed": sorted({r.observation["env_id"] for r in listed})}

print(json.dumps(asyncio.run(main(json.load(sys.stdin)))))
"""


def test_serve_openenv_where_refuses_an_outside_id_as_an_unknown_one(warehouse, tmp_path):
    """`vhd serve-openenv --where` as a user starts it: reset(env_id=) outside the selection gets the very error of
    an id of no environment; inside it an episode plays to its reward, and reset(seed=) stays inside."""
    from envs.catalog import select_specs
    from tests.serving.test_http import serve_cli

    where = "family = 'knapsack'"
    inside, outside = select_specs(where, None, warehouse), select_specs(f"NOT ({where})", None, warehouse)
    spec = inside[0]
    with open(tmp_path / "server.log", "w") as log:
        process, url = serve_cli("serve-openenv", "--warehouse", warehouse, "--where", where, "--mode",
                                 "hidden,revealed", log=log)
    try:
        answer = run_in_sidecar("openenv", SCOPED, {
            "url": url, "unknown": "knapsack-doesnotexist", "outside": [s.env_id for s in outside],
            "inside": spec.env_id, "actions": list(oracle(Environment(spec, "revealed"))), "rows": 2 * len(inside)})
    finally:
        process.terminate()
        process.wait(30)
    assert answer["unknown"] and "unknown environment id" in answer["unknown"] and "\n" not in answer["unknown"]
    expected = answer["unknown"].replace("knapsack-doesnotexist", "<id>")
    assert {env_id: text.replace(env_id, "<id>") for env_id, text in answer["outside"].items()} == {
        s.env_id: expected for s in outside}
    assert (answer["env_id"], answer["done"], answer["reward"]) == (spec.env_id, True, 1.0)
    assert answer["listed"] == sorted(s.env_id for s in inside)


TYPED_STATE = """
import asyncio, json, sys
from openenv.core.env_server.mcp_types import CallToolAction
from integrations.openenv_client import VhdplayEnv, VhdplayState

async def main(p):
    async with VhdplayEnv(base_url=p["url"]) as env:
        await env.reset(split=p["split"], index=p["index"])
        before = await env.state()
        for name, args in p["actions"]:
            result = await env.step(CallToolAction(tool_name=name, arguments=args))
        after = await env.state()
        return {"typed": isinstance(after, VhdplayState), "before": before.model_dump(), "after": after.model_dump(),
                "reward": result.reward}

print(json.dumps(asyncio.run(main(json.load(sys.stdin)))))
"""


def test_the_typed_openenv_clients_state_carries_score_and_u(served):
    """OpenEnv's MCPToolClient.state() keeps episode_id and step_count only; integrations.openenv_client.VhdplayEnv
    (OpenEnv's client with vhdplay's state model) keeps the score, u and turns the server sends."""
    url, tasks = served
    task = next(t for t in tasks.splits["train"] if t["family"] == "lp" and t["mode"] == "hidden")
    played = play(_env_of(task), "oracle")
    actions = [[step["tool"], step["arguments"]] for step in played.trajectory]
    # the openenv sidecar holds openenv and vhdplay without its dependencies: the client needs nothing else
    answer = run_in_sidecar("openenv", TYPED_STATE, {"url": url, "split": "train", "index": task["index"],
                                                      "actions": actions})
    assert answer["typed"] and answer["reward"] == pytest.approx(1.0)
    before, after = answer["before"], answer["after"]
    assert (before["env_id"], before["turns"], before["done"]) == (task["env_id"], 0, False)
    assert (after["score"], after["done"], after["turns"]) == (pytest.approx(1.0), True, played.turns)
    assert after["u"] == pytest.approx(played.u) and after["step_count"] == played.turns
    assert after["task"]["index"] == task["index"]
    assert set(after) >= set(STATE_SCHEMA["properties"])  # every field the server's schema names, typed
