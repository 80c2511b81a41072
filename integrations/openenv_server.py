"""`vhd serve-openenv`: the catalog as an OpenEnv (0.10) environment server named "vhdplay".

It speaks OpenEnv's wire protocol, so OpenEnv's own clients (`GenericEnvClient`, `MCPToolClient`, and the trainers
built on them: TRL, SkyRL, Unsloth, ART) play it unchanged:

    WebSocket /ws   one session per connection, its own Environment; JSON messages
                    {"type": "reset", "data": {...}}  -> {"type": "observation", "data": {observation, reward, done}}
                    {"type": "step",  "data": action} -> the same; action = MCP's CallToolAction
                         {"type": "call_tool", "tool_name": ..., "arguments": {...}} or {"type": "list_tools"}
                    {"type": "state"} -> {"type": "state", "data": {episode_id, step_count, ..., score, u}}
                         (OpenEnv's MCPToolClient keeps only episode_id and step_count of it: the typed client
                         integrations.openenv_client.VhdplayEnv keeps all, as VhdplayState)
                    {"type": "mcp", "data": JSON-RPC tools/list | tools/call}, {"type": "close"}
                    a refused message -> {"type": "error", "data": {"message": <one line>, "code": ...}}
    GET  /health, /metadata, /schema (the action, observation and state JSON schemas)
    Task API: GET /list_environments, GET /vhdplay/splits, POST /vhdplay/num_tasks {split},
              POST /vhdplay/task {split, index}, POST /vhdplay/tasks {split}, POST /vhdplay/task_range

Reset picks the environment: `reset(split=, index=)` (a Task API row), `reset(env_id=, mode=)` (an id outside the
selection, `serve(where=)`, is refused as an unknown one: a served subset is the whole world), or
`reset(seed=)` (row seed mod the number of rows of `split`, default the first split). A task row is one
(environment, mode) of the selection, in env_id then mode order. A tool call's observation is the environment's
answer (a mistake is an answer, as in process: `{"error": ...}` that spends a turn); the reward is 0.0 on every step
but the one that ends the episode, which carries the score, so the sum over an episode is the score. A step after
the end, or before any reset, is refused with an error message. At most `max_sessions` sessions are open at once,
WebSocket and /mcp ones under the one cap, and at most `per_client` of them per client (peer address, whatever the
transport); one more gets CAPACITY_REACHED (a WebSocket is then closed), while other clients still get sessions.

Every WebSocket message and /mcp body is read under schemas.payload's limits, the guard of every adapter: a binary
frame, a message that is not JSON or UTF-8, nested more than payload.MAX_MESSAGE_DEPTH deep, gets an error message
on the same session, which goes on (an integer of any length is read, for the environment's own error); /mcp answers
those with JSON-RPC -32700 or -32600, and a body over payload.MAX_BYTES with 413 before reading it whole. A reset to
a catalog row that fails its checks on load (edited, not a spec, an unknown family) is an EXECUTION_ERROR message.

Sessions live in serving.sessions.SessionStore (as `vhd serve-envs`'s), MCP requests are answered by
serving.mcp_server.dispatch (as `vhd serve-mcp`'s JSON-RPC framing), and a refusal's code comes from its type:
WS_CODES (the WebSocket's), RPC_CODES (JSON-RPC's), TASK_API_STATUS (the Task API's HTTP status).

OpenEnv's own server package (`openenv`) is not imported: its fastmcp 3 requires mcp<2, vhdplay's serve-mcp mcp 2.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from fastapi import Request, WebSocket
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict

from envs.environment import Environment
from schemas.envspec import EnvSpec
from schemas.payload import MAX_BYTES
from schemas.strict_json import dumps
from serving.http import BodyLimit
from serving.mcp_server import (
    InvalidParams,
    Methods,
    ParseError,
    RpcError,
    dispatch,
    mcp_tools,
    parse,
    rpc_error,
)
from serving.sessions import (
    BadRequest,
    CapacityReached,
    EpisodeOver,
    NotFound,
    Session,
    SessionError,
    SessionStore,
    Unservable,
    check_mode,
    code_for,
)

ENV_NAME = "vhdplay"
SESSIONS_PER_CLIENT = 64  # a quarter of the default --max-sessions: one client cannot hold the whole server
FINAL_ONLY = "final_step"

CALL_TOOL_SCHEMA = {
    "title": "CallToolAction", "type": "object",
    "description": "Call one of the environment's tools (MCP tools/call); {\"type\": \"list_tools\"} lists them.",
    "properties": {"type": {"const": "call_tool", "default": "call_tool", "type": "string"},
                   "tool_name": {"type": "string", "description": "Name of the tool to call"},
                   "arguments": {"type": "object", "description": "Arguments to pass to the tool"},
                   "metadata": {"type": "object"}},
    "required": ["tool_name"]}
OBSERVATION_SCHEMA = {
    "title": "CallToolObservation", "type": "object",
    "properties": {"tool_name": {"type": "string"}, "result": {"description": "the MCP CallToolResult: content, "
                                                               "structured_content, data (the observation), is_error"},
                   "error": {"type": ["object", "null"]}, "done": {"type": "boolean"},
                   "reward": {"type": ["number", "null"]}, "metadata": {"type": "object"}}}
STATE_SCHEMA = {
    "title": "VhdState", "type": "object",
    "properties": {"episode_id": {"type": ["string", "null"]}, "step_count": {"type": "integer"},
                   "env_id": {"type": ["string", "null"]}, "mode": {"type": ["string", "null"]},
                   "turns": {"type": "integer"}, "turn_budget": {"type": "integer"}, "done": {"type": "boolean"},
                   "score": {"type": ["number", "null"]}, "u": {"type": ["number", "null"]},
                   "task": {"type": ["object", "null"], "description": "the Task API row reset played, if any"}}}


class NoEpisode(SessionError):
    """A step, tool call or tool listing before the session's first reset."""


class UnknownMessage(BadRequest):
    """A WebSocket message of a type this server does not take."""


# the code of a refusal, by its type (the most specific one named wins)
WS_CODES = {CapacityReached: "CAPACITY_REACHED", EpisodeOver: "EXECUTION_ERROR", NoEpisode: "EXECUTION_ERROR",
            UnknownMessage: "UNKNOWN_TYPE", ParseError: "INVALID_JSON", RpcError: "VALIDATION_ERROR",
            Unservable: "EXECUTION_ERROR", SessionError: "VALIDATION_ERROR"}
RPC_CODES = {CapacityReached: -32000, SessionError: InvalidParams.code}
TASK_API_STATUS = {NotFound: 404, SessionError: 400}


@dataclass
class TaskRows:
    """The Task API's rows: (env_id, mode) per split, with the columns a curriculum filters on."""

    splits: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @classmethod
    def from_catalog(cls, warehouse, where: str = "true", modes: list[str] | tuple[str, ...] = ("hidden",)):
        from envs.catalog import check_predicate
        from warehouse.catalog import run_query

        sql = ("SELECT env_id, split, family, tier, size, horizon, turn_budget, u0, u_star, "
               f"informed_score, heuristic_score FROM environments WHERE ({check_predicate(where)}) "
               "ORDER BY split, env_id")
        rows = run_query(warehouse, sql).to_pylist()
        return cls.from_rows(rows, modes)

    @classmethod
    def from_rows(cls, rows: list[dict[str, Any]], modes) -> TaskRows:
        splits: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            for mode in modes:
                tasks = splits.setdefault(row["split"], [])
                tasks.append({**row, "mode": mode, "index": len(tasks), "id": f"{row['env_id']}/{mode}"})
        return cls(splits)

    def env_ids(self) -> frozenset[str]:
        """Every environment of the selection, whatever its split: the only ones a session may reset to."""
        return frozenset(task["env_id"] for tasks in self.splits.values() for task in tasks)

    def split(self, split: str) -> list[dict[str, Any]]:
        if split not in self.splits:
            known = ", ".join(sorted(self.splits)) or "none: the selection is empty"
            raise NotFound(f"unknown split {split!r}; splits: {known}")
        return self.splits[split]

    def task(self, split: str, index: Any) -> dict[str, Any]:
        tasks = self.split(split)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(tasks):
            raise BadRequest(f"index {index!r} is outside split {split!r} (0..{len(tasks) - 1})")
        return tasks[index]


def _as_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"{name} must be an integer, got {value!r}")
    return value


@dataclass
class Episode:
    """What an OpenEnv session keeps beside its Environment (its SessionStore state)."""

    episode_id: str | None = None
    step_count: int = 0
    task: dict[str, Any] | None = None  # the Task API row reset played, if any
    rewarded: bool = False  # the final step's reward was given: the episode is over


class Play:
    """OpenEnv's session semantics over SessionStore sessions: reset picks the environment (and starts a new
    episode), step and MCP's tools/call play it, state reads it. Transport-free: the app's routes call it."""

    def __init__(self, store: SessionStore, tasks: TaskRows):
        self.store, self.tasks = store, tasks

    def open(self, held: bool = False, client: str | None = None) -> Session:
        return self.store.open(Episode(), held, client)

    def reset(self, session: Session, data: dict[str, Any]) -> dict[str, Any]:
        data = {k: v for k, v in data.items() if v is not None}
        mode = check_mode(data.get("mode", "hidden"))
        task = None
        if "env_id" in data:
            env_id = data["env_id"]
        elif "index" in data or "split" in data:
            task = self.tasks.task(data.get("split", next(iter(self.tasks.splits), "train")),
                                   _as_int(data.get("index", 0), "index"))
            env_id, mode = task["env_id"], task["mode"]
        else:
            split = data.get("split") or next(iter(self.tasks.splits), None)
            if split is None:
                raise BadRequest("the selection holds no environment; pass env_id")
            rows = self.tasks.split(split)
            task = rows[_as_int(data.get("seed", 0), "seed") % len(rows)]
            env_id, mode = task["env_id"], task["mode"]
        if not isinstance(env_id, str):
            raise BadRequest(f"env_id must be a string, got {env_id!r}")
        spec = self.store.spec(env_id)  # NotFound for an id outside the selection, as for an id of no environment
        env = session.env = Environment(spec, mode)
        session.state = Episode(str(data.get("episode_id") or uuid.uuid4()), 0, task, False)
        observation = {"env_id": env.env_id, "mode": mode, "instructions": env.instructions,
                       "prompt": [{"role": "system", "content": env.instructions},
                                  {"role": "user", "content": "Begin."}],
                       "tool_names": sorted(env.tool_names), "turn_budget": spec.turn_budget}
        if task is not None:
            observation["task"] = {"split": spec.split, "index": task["index"], "id": task["id"]}
        return {"observation": observation, "reward": None, "done": False}

    def step(self, session: Session, action: Any) -> dict[str, Any]:
        if not isinstance(action, dict):
            raise BadRequest("the action must be a JSON object, e.g. {\"type\": \"call_tool\", \"tool_name\": ..., "
                             "\"arguments\": {...}}")
        kind = action.get("type", "call_tool")
        if kind == "list_tools":
            tools = [tool.model_dump(exclude_none=True) for tool in self.tools(session)]
            return {"observation": {"tools": tools}, "reward": None, "done": session.env.done}
        if kind != "call_tool":
            raise BadRequest(f"unknown action type {kind!r}; use call_tool or list_tools")
        if "tool_name" not in action:
            raise BadRequest("a call_tool action needs tool_name")
        name = action["tool_name"]
        observation, done, reward = self.call(session, name, action.get("arguments"))
        result = {"content": [{"type": "text", "text": dumps(observation)}], "structured_content": observation,
                  "data": observation, "is_error": "error" in observation}
        env = session.env
        metadata = {"turns": env.turns, "turn_budget": env.spec.turn_budget}
        if done:
            metadata.update(score=env.score(), u=env.utility())
        return {"observation": {"tool_name": name, "result": result, "error": None, "metadata": metadata},
                "reward": reward, "done": done, "metadata": metadata}

    def state(self, session: Session) -> dict[str, Any]:
        env, episode = session.env, session.state
        return {"episode_id": episode.episode_id, "step_count": episode.step_count,
                "env_id": env.env_id if env else None, "mode": env.mode if env else None,
                "turns": env.turns if env else 0, "turn_budget": env.spec.turn_budget if env else 0,
                "done": env.done if env else False, "score": env.score() if env else None,
                "u": env.utility() if env else None, "task": episode.task}

    def tools(self, session: Session) -> list:
        return mcp_tools(self._env(session))

    def call(self, session: Session, name: Any, arguments: Any) -> tuple[dict[str, Any], bool, float]:
        """(the observation, done, the reward) of one tool call: the reward is 0.0 but on the step that ends."""
        env, episode = self._env(session), session.state
        if episode.rewarded:
            raise EpisodeOver("the episode is over and its reward was given; reset to play again")
        if not isinstance(name, str):
            raise BadRequest(f"tool_name must be a string, got {name!r}")
        if arguments is not None and not isinstance(arguments, dict):
            raise BadRequest("arguments must be a JSON object")
        observation = env.step(name, arguments or {})
        episode.step_count += 1
        reward = 0.0
        if env.done:
            reward, episode.rewarded = env.score(), True
        return observation, env.done, reward

    def mcp_methods(self, session_of: Callable[[dict[str, Any]], Session]) -> Methods:
        """MCP's tools/list and tools/call on the session `session_of(params)` (the same calls as step, same
        turns), for serving.mcp_server.dispatch."""
        def list_tools(params):
            return {"tools": [tool.model_dump(by_alias=True, exclude_none=True)
                              for tool in self.tools(session_of(params))]}

        def call_tool(params):
            observation, done, reward = self.call(session_of(params), params.get("name"), params.get("arguments"))
            return {"content": [{"type": "text", "text": dumps(observation)}], "structuredContent": observation,
                    "data": observation,  # as FastMCP's CallToolResult: OpenEnv's call_tool returns it
                    "isError": "error" in observation, "_meta": {"done": done, "reward": reward}}

        return {"tools/list": list_tools, "tools/call": call_tool}

    @staticmethod
    def _env(session: Session) -> Environment:
        if session.env is None:
            raise NoEpisode("no episode yet: send reset first")
        return session.env


class SplitRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    split: str


class TaskRequest(SplitRequest):
    index: int


class RangeRequest(SplitRequest):
    start: int | None = None
    stop: int | None = None


def _error(error: Exception) -> str:
    return dumps({"type": "error", "data": {"message": str(error), "code": code_for(error, WS_CODES)}})


def _json(data: Any) -> Response:
    return Response(dumps(data, default=float), media_type="application/json")


def create_app(load: Callable[[str], EnvSpec], tasks: TaskRows, max_sessions: int = 256,
               session_ttl_s: float = 600.0, per_client: int | None = SESSIONS_PER_CLIENT):
    """The app over `load(env_id)` (an EnvSpec, or KeyError) and the selection's task rows: an id outside them is
    refused as an unknown one. Sessions live in a SessionStore: a WebSocket's own session is held while it is
    connected and closed with it; a session created over HTTP /mcp expires after `session_ttl_s` idle, unless a
    WebSocket holds it."""
    from fastapi import FastAPI, WebSocketDisconnect
    from fastapi.concurrency import run_in_threadpool
    from fastapi.responses import JSONResponse

    from envs.catalog import not_found
    from integrations.rows import REWARD_FORMULA

    served = tasks.env_ids()  # a served subset is the whole world: reset(env_id=) outside it is an unknown id

    def served_load(env_id: str) -> EnvSpec:
        if env_id not in served:
            raise not_found(env_id)
        return load(env_id)

    store = SessionStore(served_load, ttl_s=session_ttl_s, max_sessions=max_sessions,
                         create_hint="openenv/session/create", per_client=per_client)
    play = Play(store, tasks)
    app = FastAPI(title="vhdplay OpenEnv server", description=__doc__.split("\n\n")[0])
    app.add_middleware(BodyLimit, limit=MAX_BYTES)  # /mcp and the Task API: 413 past schemas.payload's limit
    app.state.store = store

    @app.exception_handler(SessionError)
    async def refused(request: Request, error: SessionError):
        return JSONResponse({"detail": str(error)}, status_code=code_for(error, TASK_API_STATUS))

    def check_name(env_name: str) -> None:
        if env_name.lower() != ENV_NAME:
            raise NotFound(f"unknown environment {env_name!r}; this server serves {ENV_NAME!r}")

    @app.get("/health")
    async def health():
        store.expire()
        return {"status": "healthy", "sessions": len(store.sessions), "max_sessions": max_sessions}

    @app.get("/metadata")
    async def metadata():
        return {"name": ENV_NAME, "description": "vhdplay: solved-model RL environments played through tools "
                                                 f"(MCP CallToolAction); reward on the final step = {REWARD_FORMULA}",
                "version": _version(), "reward": {"range": [0.0, 1.0], "given": FINAL_ONLY}}

    @app.get("/schema")
    async def schema():
        return {"action": CALL_TOOL_SCHEMA, "observation": OBSERVATION_SCHEMA, "state": STATE_SCHEMA}

    @app.get("/list_environments")
    async def list_environments():
        return [ENV_NAME]

    @app.get("/{env_name}/splits")
    async def list_splits(env_name: str):
        check_name(env_name)
        return [{"name": s, "type": s if s in ("train", "validation", "test") else "validation",
                 "num_tasks": len(rows)} for s, rows in tasks.splits.items()]

    @app.post("/{env_name}/num_tasks")
    async def num_tasks(env_name: str, request: SplitRequest):
        check_name(env_name)
        return {"num_tasks": len(tasks.split(request.split))}

    @app.post("/{env_name}/task")
    async def get_task(env_name: str, request: TaskRequest):
        check_name(env_name)
        return {"task": _task_view(tasks.task(request.split, request.index))}

    @app.post("/{env_name}/tasks")
    async def list_tasks(env_name: str, request: SplitRequest):
        check_name(env_name)
        return {"tasks": [_task_view(t) for t in tasks.split(request.split)], "env_name": ENV_NAME}

    @app.post("/{env_name}/task_range")
    async def get_task_range(env_name: str, request: RangeRequest):
        check_name(env_name)
        return {"tasks": [_task_view(t) for t in tasks.split(request.split)[request.start:request.stop]]}

    def session_of(params: dict[str, Any]) -> Session:
        sid = params.get("session_id")
        if not isinstance(sid, str):
            raise BadRequest(f"missing session_id (got {sid!r}); create a session with openenv/session/create and "
                             "pass its id as params.session_id")
        return store.get(sid)

    def close(params: dict[str, Any]) -> dict[str, Any]:
        return {"session_id": store.close(session_of(params).session_id).session_id, "closed": True}

    http_methods = {"openenv/session/create": lambda params: {"session_id": play.open().session_id},
                    "openenv/session/close": close, **play.mcp_methods(session_of)}

    @app.post("/mcp")
    async def mcp_http(request: Request):
        """MCP JSON-RPC over HTTP (OpenEnv's production mode): openenv/session/create and /close, tools/list and
        tools/call on a session (`params.session_id`)."""
        try:
            body = parse(await request.body(), "the body")  # schemas.payload's limits: -32700 or -32600
        except RpcError as error:
            return _json(rpc_error(error.request_id, error.code, str(error)))
        client = request.client.host if request.client else None  # the session's quota key: its creator
        methods = {**http_methods, "openenv/session/create": lambda params: {
            "session_id": play.open(client=client).session_id}}
        return _json(dispatch(body, methods, RPC_CODES))

    @app.websocket("/ws")
    async def ws(websocket: WebSocket):
        await websocket.accept()
        requested = websocket.query_params.get("session_id")
        try:  # a session created over /mcp (OpenEnv's production mode), or one of its own
            session = store.hold(requested) if requested else play.open(
                held=True, client=websocket.client.host if websocket.client else None)
        except SessionError as error:
            try:
                await websocket.send_text(_error(error))
                await websocket.close()
            except (RuntimeError, WebSocketDisconnect):  # the client is already gone: nothing to tell it
                pass
            return
        methods = play.mcp_methods(lambda params: session)
        try:
            while True:
                frame = await websocket.receive()
                if frame["type"] == "websocket.disconnect":
                    raise WebSocketDisconnect(frame.get("code", 1000))
                try:
                    if frame.get("text") is None:
                        raise ParseError("Parse error: a binary frame; send each message as a JSON text frame")
                    message = parse(frame["text"], "the message")  # schemas.payload's limits
                    kind = message.get("type") if isinstance(message, dict) else None
                    data = message.get("data") if isinstance(message, dict) else None
                    if kind == "close":
                        break
                    if kind == "reset":
                        if data is not None and not isinstance(data, dict):
                            raise BadRequest("reset data must be a JSON object")
                        played = await run_in_threadpool(play.reset, session, data or {})
                        reply = {"type": "observation", "data": played}
                    elif kind == "step":
                        reply = {"type": "observation", "data": play.step(session, data)}
                    elif kind == "state":
                        reply = {"type": "state", "data": play.state(session)}
                    elif kind == "mcp":
                        reply = {"type": "mcp", "data": dispatch(data, methods, RPC_CODES)}
                    else:
                        raise UnknownMessage(f"Unknown message type: {kind!r}")
                except (SessionError, RpcError) as error:
                    await websocket.send_text(_error(error))
                    continue
                await websocket.send_text(dumps(reply, default=float))
        except WebSocketDisconnect:
            pass
        finally:
            if requested:
                store.release(session.session_id)
            else:
                store.discard(session.session_id)
        try:
            await websocket.close()
        except (RuntimeError, WebSocketDisconnect):  # already closed by the client, or it went away without a word
            pass

    return app


def _task_view(task: dict[str, Any]) -> dict[str, Any]:
    return {**task, "reset": {"split": task["split"], "index": task["index"]}}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("vhdplay")
    except PackageNotFoundError:
        return "0"


def manifest() -> str:
    """The openenv.yaml shipped beside this module (OpenEnv's manifest for `vhd serve-openenv`)."""
    return resources.files("integrations").joinpath("openenv.yaml").read_text()


def serve(warehouse, host: str = "127.0.0.1", port: int = 8000, max_sessions: int = 256, where: str = "true",
          modes: list[str] | tuple[str, ...] = ("hidden",), tasks: TaskRows | None = None,
          per_client: int | None = SESSIONS_PER_CLIENT) -> None:
    import uvicorn

    from envs.catalog import load_spec

    tasks = tasks or TaskRows.from_catalog(warehouse, where, modes)
    app = create_app(lambda env_id: load_spec(env_id, warehouse), tasks, max_sessions, per_client=per_client)
    # proxy_headers off: a client is its TCP peer, never what an X-Forwarded-For header claims (the quota's key)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False, ws_max_size=1 << 20,
                proxy_headers=False)


def __getattr__(name: str):
    """`integrations.openenv_server:app` (openenv.yaml's app, for `uvicorn`): the default warehouse's catalog
    ($VHD_WAREHOUSE), hidden mode, built on first access."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from envs.catalog import load_spec
    from warehouse.location import resolve_warehouse

    warehouse = resolve_warehouse(None)
    app = create_app(lambda env_id: load_spec(env_id, warehouse), TaskRows.from_catalog(warehouse))
    globals()["app"] = app
    return app
