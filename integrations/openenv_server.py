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
the end, or before any reset, is refused with an error message. At most `max_sessions` sessions are open at once;
one more gets CAPACITY_REACHED and is closed.

OpenEnv's own server package (`openenv`) is not imported: its fastmcp 3 requires mcp<2, vhdplay's serve-mcp mcp 2.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from fastapi import Request, WebSocket
from pydantic import BaseModel, ConfigDict

from envs.environment import Environment
from schemas.envspec import MODES, EnvSpec

ENV_NAME = "vhdplay"
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


class Refused(ValueError):
    """A message the session cannot act on; its text is the one-line error the client gets."""

    def __init__(self, message: str, code: str = "EXECUTION_ERROR"):
        super().__init__(message)
        self.code = code


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
            raise Refused(f"unknown split {split!r}; splits: {known}", "VALIDATION_ERROR")
        return self.splits[split]

    def task(self, split: str, index: Any) -> dict[str, Any]:
        tasks = self.split(split)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(tasks):
            raise Refused(f"index {index!r} is outside split {split!r} (0..{len(tasks) - 1})", "VALIDATION_ERROR")
        return tasks[index]


def _as_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Refused(f"{name} must be an integer, got {value!r}", "VALIDATION_ERROR")
    return value


class Session:
    """One WebSocket session: one Environment at a time, reset as often as the client likes."""

    def __init__(self, load: Callable[[str], EnvSpec], tasks: TaskRows):
        self.load, self.tasks = load, tasks
        self.env: Environment | None = None
        self.episode_id: str | None = None
        self.step_count = 0
        self.task: dict[str, Any] | None = None
        self.rewarded = False
        self.used = time.monotonic()

    def reset(self, data: dict[str, Any]) -> dict[str, Any]:
        data = {k: v for k, v in data.items() if v is not None}
        mode = data.get("mode", "hidden")
        if mode not in MODES:
            raise Refused(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}", "VALIDATION_ERROR")
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
                raise Refused("the selection holds no environment; pass env_id", "VALIDATION_ERROR")
            rows = self.tasks.split(split)
            seed = _as_int(data.get("seed", 0), "seed")
            task = rows[seed % len(rows)]
            env_id, mode = task["env_id"], task["mode"]
        if not isinstance(env_id, str):
            raise Refused(f"env_id must be a string, got {env_id!r}", "VALIDATION_ERROR")
        try:
            spec = self.load(env_id)
        except KeyError as error:  # envs.catalog.UnknownEnvironment
            raise Refused(str(error.args[0]), "VALIDATION_ERROR") from None
        self.env = Environment(spec, mode)
        self.episode_id = str(data.get("episode_id") or uuid.uuid4())
        self.step_count, self.task, self.rewarded = 0, task, False
        observation = {"env_id": self.env.env_id, "mode": mode, "instructions": self.env.instructions,
                       "prompt": [{"role": "system", "content": self.env.instructions},
                                  {"role": "user", "content": "Begin."}],
                       "tool_names": sorted(self.env.tool_names), "turn_budget": spec.turn_budget}
        if task is not None:
            observation["task"] = {"split": spec.split, "index": task["index"], "id": task["id"]}
        return {"observation": observation, "reward": None, "done": False}

    def tools(self) -> list[dict[str, Any]]:
        env = self._env()
        return [{"name": t["function"]["name"], "description": t["function"]["description"],
                 "input_schema": t["function"]["parameters"]} for t in env.tools()]

    def call(self, name: Any, arguments: Any) -> tuple[dict[str, Any], bool, float | None]:
        """(the observation, done, the reward) of one tool call."""
        env = self._env()
        if self.rewarded:
            raise Refused("the episode is over and its reward was given; reset to play again")
        if not isinstance(name, str):
            raise Refused(f"tool_name must be a string, got {name!r}", "VALIDATION_ERROR")
        if arguments is not None and not isinstance(arguments, dict):
            raise Refused("arguments must be a JSON object", "VALIDATION_ERROR")
        observation = env.step(name, arguments or {})
        self.step_count += 1
        done = env.done
        reward = 0.0
        if done:
            reward, self.rewarded = env.score(), True
        return observation, done, reward

    def step(self, action: Any) -> dict[str, Any]:
        if not isinstance(action, dict):
            raise Refused("the action must be a JSON object, e.g. {\"type\": \"call_tool\", \"tool_name\": ..., "
                          "\"arguments\": {...}}", "VALIDATION_ERROR")
        kind = action.get("type", "call_tool")
        if kind == "list_tools":
            return {"observation": {"tools": self.tools()}, "reward": None, "done": self._env().done}
        if kind != "call_tool":
            raise Refused(f"unknown action type {kind!r}; use call_tool or list_tools", "VALIDATION_ERROR")
        if "tool_name" not in action:
            raise Refused("a call_tool action needs tool_name", "VALIDATION_ERROR")
        name = action["tool_name"]
        observation, done, reward = self.call(name, action.get("arguments"))
        text = json.dumps(observation)
        result = {"content": [{"type": "text", "text": text}], "structured_content": observation, "data": observation,
                  "is_error": "error" in observation}
        metadata = {"turns": self.env.turns, "turn_budget": self.env.spec.turn_budget}
        if done:
            metadata.update(score=self.env.score(), u=self.env.utility())
        return {"observation": {"tool_name": name, "result": result, "error": None, "metadata": metadata},
                "reward": reward, "done": done, "metadata": metadata}

    def state(self) -> dict[str, Any]:
        env = self.env
        return {"episode_id": self.episode_id, "step_count": self.step_count,
                "env_id": env.env_id if env else None, "mode": env.mode if env else None,
                "turns": env.turns if env else 0, "turn_budget": env.spec.turn_budget if env else 0,
                "done": env.done if env else False, "score": env.score() if env else None,
                "u": env.utility() if env else None, "task": self.task}

    def mcp(self, request: Any) -> dict[str, Any]:
        """MCP JSON-RPC over the session: tools/list, tools/call (the same calls as step, same turns)."""
        if not isinstance(request, dict):
            return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}}
        rid, method, params = request.get("id"), request.get("method"), request.get("params") or {}
        try:
            if method == "tools/list":
                tools = [{"name": t["name"], "description": t["description"], "inputSchema": t["input_schema"]}
                         for t in self.tools()]
                return {"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}}
            if method == "tools/call":
                observation, done, reward = self.call(params.get("name"), params.get("arguments"))
                return {"jsonrpc": "2.0", "id": rid, "result": {
                    "content": [{"type": "text", "text": json.dumps(observation)}], "structuredContent": observation,
                    "data": observation,  # as FastMCP's CallToolResult: OpenEnv's call_tool returns it
                    "isError": "error" in observation, "_meta": {"done": done, "reward": reward}}}
        except Refused as refused:
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": str(refused)}}
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}}

    def _env(self) -> Environment:
        if self.env is None:
            raise Refused("no episode yet: send reset first")
        return self.env


class SplitRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    split: str


class TaskRequest(SplitRequest):
    index: int


class RangeRequest(SplitRequest):
    start: int | None = None
    stop: int | None = None


def _error(message: str, code: str) -> str:
    return json.dumps({"type": "error", "data": {"message": message, "code": code}})


def create_app(load: Callable[[str], EnvSpec], tasks: TaskRows, max_sessions: int = 256,
               session_ttl_s: float = 600.0):
    from fastapi import FastAPI, HTTPException, WebSocketDisconnect
    from fastapi.concurrency import run_in_threadpool

    from integrations.rows import REWARD_FORMULA

    app = FastAPI(title="vhdplay OpenEnv server", description=__doc__.split("\n\n")[0])
    app.state.sessions = 0
    lock = asyncio.Lock()
    specs: dict[str, EnvSpec] = {}
    served = tasks.env_ids()  # a served subset is the whole world: reset(env_id=) outside it is an unknown id

    def cached_load(env_id: str) -> EnvSpec:
        if env_id not in served:
            from envs.catalog import not_found

            raise not_found(env_id)
        if env_id not in specs:
            specs[env_id] = load(env_id)
        return specs[env_id]

    def http_tasks(call):
        try:
            return call()
        except Refused as refused:
            raise HTTPException(404 if "split" in str(refused) and "unknown" in str(refused) else 400,
                                str(refused)) from None

    def check_name(env_name: str) -> None:
        if env_name.lower() != ENV_NAME:
            raise HTTPException(404, f"unknown environment {env_name!r}; this server serves {ENV_NAME!r}")

    @app.get("/health")
    async def health():
        return {"status": "healthy", "sessions": app.state.sessions, "max_sessions": max_sessions}

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
        return {"num_tasks": len(http_tasks(lambda: tasks.split(request.split)))}

    @app.post("/{env_name}/task")
    async def get_task(env_name: str, request: TaskRequest):
        check_name(env_name)
        return {"task": _task_view(http_tasks(lambda: tasks.task(request.split, request.index)))}

    @app.post("/{env_name}/tasks")
    async def list_tasks(env_name: str, request: SplitRequest):
        check_name(env_name)
        return {"tasks": [_task_view(t) for t in http_tasks(lambda: tasks.split(request.split))],
                "env_name": ENV_NAME}

    @app.post("/{env_name}/task_range")
    async def get_task_range(env_name: str, request: RangeRequest):
        check_name(env_name)
        rows = http_tasks(lambda: tasks.split(request.split))
        return {"tasks": [_task_view(t) for t in rows[request.start:request.stop]]}

    registry: dict[str, Session] = {}
    attached: set[str] = set()

    def reap() -> None:
        """Forget sessions created over HTTP /mcp, idle past session_ttl_s and not attached to a WebSocket."""
        now = time.monotonic()
        for sid in [sid for sid, s in registry.items() if sid not in attached and now - s.used > session_ttl_s]:
            registry.pop(sid, None)

    async def open_session() -> tuple[str, Session]:
        async with lock:
            reap()
            if len(registry) >= max_sessions:
                raise Refused(f"the server is at capacity ({max_sessions} sessions); retry later", "CAPACITY_REACHED")
            sid = str(uuid.uuid4())
            registry[sid] = Session(cached_load, tasks)
            app.state.sessions = len(registry)
            return sid, registry[sid]

    async def close_session(sid: str) -> None:
        async with lock:
            registry.pop(sid, None)
            attached.discard(sid)
            app.state.sessions = len(registry)

    @app.post("/mcp")
    async def mcp_http(request: Request):
        """MCP JSON-RPC over HTTP (OpenEnv's production mode): openenv/session/create and /close, tools/list and
        tools/call on a session (`params.session_id`)."""
        try:
            body = json.loads(await request.body())
        except json.JSONDecodeError as error:
            return {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": f"Parse error: {error}"}}
        if not isinstance(body, dict):
            return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}}
        rid, method = body.get("id"), body.get("method")
        params = body.get("params") if isinstance(body.get("params"), dict) else {}
        if method == "openenv/session/create":
            try:
                sid, _ = await open_session()
            except Refused as refused:
                return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": str(refused)}}
            return {"jsonrpc": "2.0", "id": rid, "result": {"session_id": sid}}
        sid = params.get("session_id")
        session = registry.get(sid) if isinstance(sid, str) else None
        if method == "openenv/session/close":
            if session is None:
                return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"unknown session {sid!r}"}}
            await close_session(sid)
            return {"jsonrpc": "2.0", "id": rid, "result": {"session_id": sid, "closed": True}}
        if session is None:
            return {"jsonrpc": "2.0", "id": rid, "error": {
                "code": -32602, "message": f"unknown or missing session_id {sid!r}; create one with "
                                           "openenv/session/create"}}
        session.used = time.monotonic()
        return session.mcp(body)

    @app.websocket("/ws")
    async def ws(websocket: WebSocket):
        await websocket.accept()
        requested = websocket.query_params.get("session_id")
        owned = not requested
        try:
            if requested:
                async with lock:
                    if requested not in registry:
                        raise Refused(f"unknown session_id {requested!r}", "VALIDATION_ERROR")
                    if requested in attached:
                        raise Refused(f"session {requested} already has an attached WebSocket", "VALIDATION_ERROR")
                    attached.add(requested)
                    sid, session = requested, registry[requested]
            else:
                sid, session = await open_session()
        except Refused as refused:
            await websocket.send_text(_error(str(refused), refused.code))
            await websocket.close()
            return
        try:
            while True:
                raw = await websocket.receive_text()
                session.used = time.monotonic()
                try:
                    message = json.loads(raw)
                except json.JSONDecodeError as error:
                    await websocket.send_text(_error(f"Invalid JSON: {error}", "INVALID_JSON"))
                    continue
                kind = message.get("type") if isinstance(message, dict) else None
                data = message.get("data") if isinstance(message, dict) else None
                try:
                    if kind == "reset":
                        if data is not None and not isinstance(data, dict):
                            raise Refused("reset data must be a JSON object", "VALIDATION_ERROR")
                        reply = {"type": "observation",
                                 "data": await run_in_threadpool(session.reset, data or {})}
                    elif kind == "step":
                        reply = {"type": "observation", "data": session.step(data)}
                    elif kind == "state":
                        reply = {"type": "state", "data": session.state()}
                    elif kind == "mcp":
                        reply = {"type": "mcp", "data": session.mcp(data)}
                    elif kind == "close":
                        break
                    else:
                        raise Refused(f"Unknown message type: {kind!r}", "UNKNOWN_TYPE")
                except Refused as refused:
                    await websocket.send_text(_error(str(refused), refused.code))
                    continue
                await websocket.send_text(json.dumps(reply, default=float))
        except WebSocketDisconnect:
            pass
        finally:
            if owned:
                await close_session(sid)
            else:
                async with lock:
                    attached.discard(sid)
        try:
            await websocket.close()
        except RuntimeError:  # already closed by the client
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
          modes: list[str] | tuple[str, ...] = ("hidden",), tasks: TaskRows | None = None) -> None:
    import uvicorn

    from envs.catalog import load_spec

    tasks = tasks or TaskRows.from_catalog(warehouse, where, modes)
    app = create_app(lambda env_id: load_spec(env_id, warehouse), tasks, max_sessions)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False, ws_max_size=1 << 20)


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
