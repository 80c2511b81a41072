"""The per-rollout tool server: the task's environment, its tools listed and called dynamically (the pattern of
verifiers' NeMo Gym toolset), the rollout's calls, turns and errors pushed to its state after every call. A call's
arguments pass schemas.payload's guard, the one of every adapter (integrations.completions.guarded_step), and the
reward's replay (integrations.vf.common.replay) passes them through the same guard."""

from __future__ import annotations

from typing import Any, cast

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent, Tool
from verifiers.v1.mcp import Toolset, ToolsetConfig

from envs.environment import Environment
from integrations.completions import guarded_step
from integrations.vf.state import VhdState
from schemas.envspec import EnvSpec
from schemas.strict_json import dumps


class VhdToolset(Toolset[ToolsetConfig, VhdState]):
    TOOL_PREFIX = None  # the environment's own tool names, unprefixed

    env: Environment | None = None

    async def setup_task(self, task) -> None:
        data = getattr(task, "data", task)  # the rollout's task data (VhdData), fetched from the state channel
        self.env = Environment(EnvSpec.model_validate_json(data.spec_json), data.mode)

    def register(self, mcp: MCPServer) -> None:
        server = cast(Any, mcp)
        server.list_tools = self._with_state(self.list_tools)
        server.call_tool = self._with_state(self.call_tool)

    def _env(self) -> Environment:
        if self.env is None:
            raise RuntimeError("the vhdplay toolset got no task (it is started per rollout)")
        return self.env

    async def list_tools(self) -> list[Tool]:
        return [Tool(name=t["function"]["name"], description=t["function"]["description"],
                     input_schema=t["function"]["parameters"]) for t in self._env().tools()]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> CallToolResult:
        env = self._env()
        observation = guarded_step(env, name, arguments)
        state = self.state
        state.calls.append({"tool": name, "arguments": arguments})  # replayed through the same guard
        state.turns, state.errors, state.done = env.turns, env.errors, env.done
        return CallToolResult(content=[TextContent(type="text", text=dumps(observation))],
                              is_error="error" in observation)


if __name__ == "__main__":
    VhdToolset.run()
