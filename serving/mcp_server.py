"""`vhd serve-mcp ENV_ID --mode M`: one environment's tools as an MCP server over stdio.

Tools are the environment's own (their JSON schemas as input schemas); a call answers with the observation
as text (`is_error` when the environment refused it) and, once the episode is over, a second text block
`{"episode_over": true, "score": ..., "u": ...}`. The environment's instructions are the server's
instructions. Agent mistakes are observations, as in process; a call after the end is an error result.

Every line is read under schemas.payload's limits, the guard of every adapter. A line that is not JSON (or
nested too deeply to read) gets the JSON-RPC error -32700 (parse error); JSON that is not a JSON-RPC message, a
line over payload.MAX_BYTES (read in pieces and dropped, never held whole) or one nesting lists or objects more
than payload.MAX_MESSAGE_DEPTH deep (which the SDK's own parser drops without an answer) -32600 (invalid request);
each with a null id unless the request's id can be read (the SDK's transport drops such lines without an
answer). Integers of any length are read (schemas.strict_json.loads), so a tool argument
of 5,000 digits reaches the environment, which answers with its own error. A message whose id is not a string or
an integer of fewer than LONG_INT_DIGITS digits (an object, a list, null, a float, a 5,000-digit integer) is an
invalid request, answered with id null (the SDK would take it for a notification, or answer under another id).
Every request read before the end of input is answered before the server exits (the SDK's loop would cancel
the ones still in flight): at end of input the read side stays open until each has its answer.

The JSON-RPC framing is shared with the servers that answer MCP requests themselves (`vhd serve-openenv`'s /mcp
and its WebSocket's "mcp" messages): `parse` a message, `dispatch` a request to a table of methods, `mcp_tools` the
environment's tools. An error's code comes from its type (RpcError's subclasses, or a table of other types).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from envs.environment import Environment
from schemas import payload
from schemas.payload import MAX_BYTES, PayloadError
from schemas.strict_json import LONG_INT_DIGITS, dumps, is_long_int
from serving.sessions import code_for


class RpcError(Exception):
    """A JSON-RPC error answer: its code from its type, its text the error's message; `request_id` the id to
    answer under when the message was read far enough to have one."""

    code = types.INTERNAL_ERROR

    def __init__(self, message: str, request_id: Any = None) -> None:
        super().__init__(message)
        self.request_id = request_id


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
    """A JSON-RPC message read under schemas.payload's limits (integers of any length read): ParseError if it is
    not JSON (or not UTF-8, or nested too deeply to read), InvalidRequest if it is over the size limit or nests
    lists or objects more than MAX_MESSAGE_DEPTH deep (answered under its id when it has one)."""
    try:
        return payload.read(text, what)
    except PayloadError as error:
        if error.limit == "size" or (error.limit == "depth" and error.parsed is not None):
            raise InvalidRequest(f"Invalid Request: {error}", _request_id(error.parsed)) from None
        raise ParseError(f"Parse error: {error}") from None


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
DRAIN_IDLE_S = 60.0  # at end of input, how long to wait for the next answer before giving up on the rest


class CheckedLines:
    """The lines of `source` that are JSON-RPC messages, for the SDK's stdio transport to read; every other line
    is answered here with the JSON-RPC error the protocol defines, sent through `replies` (set once the
    transport is open). A line with an integer literal of LONG_INT_DIGITS or more digits (which the transport's
    parser refuses as "number out of range") is handed on rewritten with that integer read by strict_json."""

    def __init__(self, source, drain_idle_s: float = DRAIN_IDLE_S) -> None:
        self.source = source
        self.replies = None
        self.ready = anyio.Event()
        self.pending: Counter = Counter()  # request ids handed on and not yet answered
        self.answered = anyio.Event()
        self.drain_idle_s = drain_idle_s

    def open(self, replies) -> None:
        self.replies = replies
        self.ready.set()

    def watch(self, write_stream) -> AnswerWatch:
        """`write_stream` (the server's side) as a stream that marks each request it answers."""
        return AnswerWatch(write_stream, self)

    def mark_answered(self, request_id: Any) -> None:
        if self.pending.get(request_id, 0) > 0:
            self.pending[request_id] -= 1
            if not self.pending[request_id]:
                del self.pending[request_id]
            self.answered.set()
            self.answered = anyio.Event()

    async def __aiter__(self):
        await self.ready.wait()
        async for line in self.source:
            checked = await self.check(line)
            if checked is not None:
                yield checked
        # End of input: keep the read side open until every request read has been answered (or none has been
        # for drain_idle_s: a request cancelled by its client gets no answer).
        while self.pending:
            with anyio.move_on_after(self.drain_idle_s) as scope:
                await self.answered.wait()
            if scope.cancelled_caught:
                break

    async def check(self, line: str) -> str | None:
        if isinstance(line, Overlong):
            await self._error(None, InvalidRequest.code, f"Invalid Request: the line is over the limit of "
                              f"{MAX_BYTES:,} bytes; send each JSON-RPC message on a line of its own, under it")
            return None
        if not line.strip():
            return None  # a blank line between messages
        try:
            data = parse(line)
        except RpcError as error:
            await self._error(error.request_id, error.code, str(error))
            return None
        if isinstance(data, dict) and "id" in data and _request_id(data) is None:
            await self._error(None, InvalidRequest.code, "Invalid Request: the id must be a string or an integer of "
                              f"fewer than {LONG_INT_DIGITS:,} digits")
            return None
        try:
            types.jsonrpc_message_adapter.validate_python(data, by_name=False)
        except ValidationError:
            await self._error(_request_id(data), InvalidRequest.code,
                              "Invalid Request: the line is JSON but not a JSON-RPC 2.0 message")
            return None
        if "method" in data:
            if "id" in data:
                self.pending[data["id"]] += 1
            elif data["method"] == "notifications/cancelled" and isinstance(data.get("params"), dict):
                self.mark_answered(data["params"].get("requestId"))  # a cancelled request is never answered
        return json.dumps(data) + "\n" if _LONG_DIGITS.search(line) else line

    async def _error(self, request_id, code: int, message: str) -> None:
        error = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))
        await self.replies.send(SessionMessage(error))


class AnswerWatch:
    """The server's write stream, marking in `lines` each request answered (a response or an error)."""

    def __init__(self, stream, lines: CheckedLines) -> None:
        self.stream = stream
        self.lines = lines

    async def send(self, item: SessionMessage, /) -> None:
        await self.stream.send(item)
        if isinstance(item.message, (types.JSONRPCResponse, types.JSONRPCError)):
            self.lines.mark_answered(item.message.id)

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def __aenter__(self) -> AnswerWatch:
        await self.stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info) -> bool | None:
        return await self.stream.__aexit__(*exc_info)


def _request_id(data: Any) -> int | str | None:
    """The message's id if it is one the SDK answers under unchanged (a string, or an integer of fewer than
    LONG_INT_DIGITS digits), else None."""
    found = data.get("id") if isinstance(data, dict) else None
    if isinstance(found, str) or (isinstance(found, int) and not isinstance(found, bool) and not is_long_int(found)):
        return found
    return None


class Overlong(str):
    """A line over the size limit as `bounded_lines` hands it on: its first characters only (the rest was read
    and dropped), so CheckedLines answers it as too large with the size limit's error."""


async def bounded_lines(stream, limit: int = MAX_BYTES):
    """The lines of a text stream, none holding more than `limit` characters in memory: a longer one is read to
    its end in pieces and handed on as an Overlong of its first `limit` characters."""
    while True:
        line = await anyio.to_thread.run_sync(stream.readline, limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith("\n"):
            while True:  # drop the rest of the line, a piece at a time
                rest = await anyio.to_thread.run_sync(stream.readline, limit)
                if not rest or rest.endswith("\n"):
                    break
            yield Overlong(line[:limit])
        else:
            yield line


async def serve_stdio(env: Environment) -> None:
    from mcp.server.stdio import stdio_server

    server = create_server(env)
    sys.stdin.reconfigure(encoding="utf-8", errors="replace")
    lines = CheckedLines(bounded_lines(sys.stdin))
    async with stdio_server(stdin=lines) as (read_stream, write_stream):
        lines.open(write_stream)
        await server.run(read_stream, lines.watch(write_stream), server.create_initialization_options())
