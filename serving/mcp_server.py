"""`vhd serve-mcp ENV_ID --mode M`: one environment's tools as an MCP server over stdio.

Tools are the environment's own (their JSON schemas as input schemas); a call answers with the observation
as text (`is_error` when the environment refused it) and, once the episode is over, a second text block
`{"episode_over": true, "score": ..., "u": ...}`. The environment's instructions are the server's
instructions. Agent mistakes are observations, as in process; a call after the end is an error result.
"""

from __future__ import annotations

import json

import mcp_types as types
from mcp.server.lowlevel import Server

from envs.environment import Environment


def create_server(env: Environment) -> Server:
    tools = [types.Tool(name=t["function"]["name"], description=t["function"]["description"],
                        input_schema=t["function"]["parameters"]) for t in env.tools()]

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        if env.done:
            text = json.dumps({"error": "the episode is over", "score": env.score(), "turns": env.turns})
            return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
        observation = env.call(params.name, params.arguments)
        content = [types.TextContent(text=observation)]
        if env.done:
            content.append(types.TextContent(text=json.dumps(
                {"episode_over": True, "score": env.score(), "u": env.utility(), "turns": env.turns})))
        return types.CallToolResult(content=content, is_error=observation.startswith('{"error"'))

    return Server(f"vhdplay-{env.spec.env_id}", version="1", instructions=env.instructions,
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(env: Environment) -> None:
    from mcp.server.stdio import stdio_server

    server = create_server(env)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
