"""`vhd serve-mcp ENV_ID --mode M`: one environment's tools as an MCP server over stdio.

Tools are the environment's own (their JSON schemas as input schemas); a call answers with the observation
as text (`is_error` when the environment refused it) and, once the episode is over, a second text block
`{"episode_over": true, "score": ..., "u": ...}`. The environment's instructions are the server's
instructions. Agent mistakes are observations, as in process; a call after the end is an error result.

A line that is not JSON gets the JSON-RPC error -32700 (parse error), JSON that is not a JSON-RPC message
-32600 (invalid request), both with a null id unless the request's id can be read (the SDK's transport drops
such lines without an answer). Integers of any length are read (schemas.strict_json.loads), so a tool argument
of 5,000 digits reaches the environment, which answers with its own error.

The JSON-RPC framing is shared with the servers that answer MCP requests themselves (`vhd serve-openenv`'s /mcp
and its WebSocket's "mcp" messages): `parse` a message, `dispatch` a request to a table of methods, `mcp_tools` the
environment's tools. An error's code comes from its type (RpcError's subclasses, or a table of other types).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from envs.environment import Environment
from schemas.strict_json import LONG_INT_DIGITS, dumps, loads
from serving.sessions import code_for


class RpcError(Exception):
    """A JSON-RPC error answer: its code from its type, its text the error's message."""

    code = types.INTERNAL_ERROR


class ParseError(RpcError):
    code = types.PARSE_ERROR


class InvalidRequest(RpcError):
    code = types.INVALID_REQUEST


class MethodNotFound(RpcError):
    code = types.METHOD_NOT_FOUND


class InvalidParams(RpcError):
    code = types.INVALID_PARAMS


Methods = Mapping[str, Callable[[dict[str, Any]], Any]]


def parse(text: str | bytes, what: str = "the line") -> Any:
    """A JSON message read with integers of any length (strict_json.loads); ParseError if it is not JSON."""
    try:
        return loads(text)
    except (ValueError, RecursionError) as error:
        reason = error.msg if isinstance(error, json.JSONDecodeError) else "nested too deeply"
        raise ParseError(f"Parse error: {what} is not JSON ({reason})") from None


def rpc_error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def dispatch(request: Any, methods: Methods, codes: Mapping[type[BaseException], int] | None = None
             ) -> dict[str, Any]:
    """The JSON-RPC answer to one request: `methods[method](params)` as its result, or an error. An RpcError
    answers with its own code; an exception of a type `codes` names (or a subclass) with that code, its text the
    message; any other exception propagates. `params` is {} unless the request's params is an object."""
    if not isinstance(request, dict):
        return rpc_error(None, InvalidRequest.code, "Invalid Request: the message is not a JSON-RPC request object")
    request_id, method = request.get("id"), request.get("method")
    params = request.get("params") if isinstance(request.get("params"), dict) else {}
    errors = tuple(codes or ())
    try:
        handler = methods.get(method) if isinstance(method, str) else None
        if handler is None:
            raise MethodNotFound(f"Method not found: {method}")
        return {"jsonrpc": "2.0", "id": request_id, "result": handler(params)}
    except RpcError as error:
        return rpc_error(request_id, error.code, str(error))
    except errors as error:
        return rpc_error(request_id, code_for(error, codes), str(error))


def mcp_tools(env: Environment) -> list[types.Tool]:
    """The environment's tools as MCP tools (their JSON schemas as input schemas)."""
    return [types.Tool(name=t["function"]["name"], description=t["function"]["description"],
                       input_schema=t["function"]["parameters"]) for t in env.tools()]


def create_server(env: Environment) -> Server:
    tools = mcp_tools(env)

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        if env.done:
            text = dumps({"error": "the episode is over", "score": env.score(), "turns": env.turns})
            return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
        observation = env.call(params.name, params.arguments)
        content = [types.TextContent(text=observation)]
        if env.done:
            content.append(types.TextContent(text=dumps(
                {"episode_over": True, "score": env.score(), "u": env.utility(), "turns": env.turns})))
        return types.CallToolResult(content=content, is_error=observation.startswith('{"error"'))

    return Server(f"vhdplay-{env.spec.env_id}", version="1", instructions=env.instructions,
                  on_list_tools=list_tools, on_call_tool=call_tool)


_LONG_DIGITS = re.compile(rf"\d{{{LONG_INT_DIGITS},}}")


class CheckedLines:
    """The lines of `source` that are JSON-RPC messages, for the SDK's stdio transport to read; every other line
    is answered here with the JSON-RPC error the protocol defines, sent through `replies` (set once the
    transport is open). A line with an integer literal of LONG_INT_DIGITS or more digits (which the transport's
    parser refuses as "number out of range") is handed on rewritten with that integer read by strict_json."""

    def __init__(self, source) -> None:
        self.source = source
        self.replies = None
        self.ready = anyio.Event()

    def open(self, replies) -> None:
        self.replies = replies
        self.ready.set()

    async def __aiter__(self):
        await self.ready.wait()
        async for line in self.source:
            checked = await self.check(line)
            if checked is not None:
                yield checked

    async def check(self, line: str) -> str | None:
        if not line.strip():
            return None  # a blank line between messages
        try:
            data = parse(line)
        except ParseError as error:
            await self._error(None, error.code, str(error))
            return None
        try:
            types.jsonrpc_message_adapter.validate_python(data, by_name=False)
        except ValidationError:
            await self._error(_request_id(data), InvalidRequest.code,
                              "Invalid Request: the line is JSON but not a JSON-RPC 2.0 message")
            return None
        return json.dumps(data) + "\n" if _LONG_DIGITS.search(line) else line

    async def _error(self, request_id, code: int, message: str) -> None:
        error = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))
        await self.replies.send(SessionMessage(error))


def _request_id(data: Any) -> int | str | None:
    found = data.get("id") if isinstance(data, dict) else None
    return found if isinstance(found, (int, str)) and not isinstance(found, bool) else None


async def serve_stdio(env: Environment) -> None:
    from mcp.server.stdio import stdio_server

    server = create_server(env)
    sys.stdin.reconfigure(encoding="utf-8", errors="replace")
    lines = CheckedLines(anyio.wrap_file(sys.stdin))
    async with stdio_server(stdin=lines) as (read_stream, write_stream):
        lines.open(write_stream)
        await server.run(read_stream, write_stream, server.create_initialization_options())
