"""`vhd serve-mcp`: the MCP Python client (stdio) plays one environment to the end of its episode."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from envs.agents import oracle
from envs.catalog import select_specs
from envs.environment import Environment
from tests.evaluation.support import generated_warehouse

VHD = str(Path(sys.executable).parent / "vhd")


@pytest.fixture(scope="module")
def warehouse(prefect_server):
    return generated_warehouse()


async def _play(warehouse: str, env_id: str, mode: str, calls):
    params = StdioServerParameters(command=VHD, args=["serve-mcp", env_id, "--mode", mode, "--warehouse", warehouse])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        listed = await session.list_tools()
        results = [await session.call_tool(name, args) for name, args in calls]
        return init, listed, results


@pytest.mark.parametrize("mode", ["hidden", "written"])
def test_the_mcp_client_plays_an_episode_to_its_end(warehouse, mode):
    spec = select_specs("family = 'inventory_dp'", 1, warehouse)[0]
    env = Environment(spec, mode)
    script = list(oracle(env))
    init, listed, results = anyio.run(_play, warehouse, spec.env_id, mode, [*script, script[0]])
    assert init.instructions == env.instructions
    assert [(t.name, t.input_schema) for t in listed.tools] == \
        [(t["function"]["name"], t["function"]["parameters"]) for t in env.tools()]
    *played, after = results
    assert not any(result.is_error for result in played)
    final = json.loads(played[-1].content[-1].text)
    assert final["episode_over"] is True and final["score"] == 1.0 and final["turns"] == len(script)
    assert after.is_error and "episode is over" in after.content[0].text


def test_an_agent_mistake_is_an_error_result(warehouse):
    spec = select_specs("family = 'knapsack'", 1, warehouse)[0]
    _, _, results = anyio.run(_play, warehouse, spec.env_id, "hidden", [("no_such_tool", {})])
    assert results[0].is_error and "unknown tool" in results[0].content[0].text


def test_an_unknown_env_id_fails_with_one_line(warehouse):
    done = subprocess.run([VHD, "serve-mcp", "knapsack-nothere", "--warehouse", warehouse], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stderr.strip().startswith("error: unknown environment id")
    assert len(done.stderr.strip().splitlines()) == 1
