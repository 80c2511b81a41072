"""`vhd serve-envs`: an HTTP API for remote rollouts, one isolated session per (environment, mode).

    POST   /sessions                 {"env_id": ..., "mode": "hidden"} -> 201 session id, instructions, tools
                                     (an id outside the server's --where is 404, as an unknown one)
    GET    /sessions/{id}/tools      the tools in OpenAI function-calling format
    POST   /sessions/{id}/call       {"name": ..., "arguments": {...}} -> the observation, turns, done
    GET    /sessions/{id}/score      score, u, turns, done
    DELETE /sessions/{id}            close it (its final score is in the answer)

Bad requests get a 4xx with {"detail": "<one line>"}, its status from the refusal's type (HTTP_STATUS: 404 an
unknown environment or session, 410 a closed or expired one, 409 a call after the episode ended, 422 an unknown
mode or tool or malformed arguments, 429 at capacity; see serving.sessions): a body over MAX_BODY_BYTES is 413
(refused on its Content-Length before it is read, or once a streamed body passes the limit), a field the body
does not take is 422 naming it. Handlers are coroutines on one event loop, so sessions never race each other;
only loading a spec from the catalog runs in a thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from schemas.envspec import EnvSpec
from schemas.strict_json import dumps, loads
from serving import sessions
from serving.sessions import DEFAULT_TTL_S, BadRequest, SessionError, SessionStore, code_for

MAX_BODY_BYTES = 1 << 20  # 1 MiB: a tool call is a few hundred bytes
HTTP_STATUS = {sessions.NotFound: 404, sessions.Gone: 410, sessions.EpisodeOver: 409, BadRequest: 422,
               sessions.CapacityReached: 429, SessionError: 400}


class CreateSession(BaseModel):
    model_config = ConfigDict(extra="forbid")

    env_id: str
    mode: str = "hidden"


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: Any = Field(default=None, description="a JSON object of the tool's arguments")


def _json(data: dict[str, Any], status: int = 200) -> Response:
    return Response(dumps(data), status_code=status, media_type="application/json")


class BodyLimit:
    """ASGI middleware: 413 for a request body over `limit` bytes, without holding more than `limit` in memory.

    A declared Content-Length over the limit is refused before any of the body is read (the server holds the
    body to that length); a streamed (chunked) body is read up to the limit, then handed on, or refused as soon
    as it passes it.
    """

    def __init__(self, app, limit: int = MAX_BODY_BYTES) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None:
            if length.isdigit() and int(length) > self.limit:
                return await self._refuse(send)
            return await self.app(scope, receive, send)
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                return await self._refuse(send)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        whole = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return whole

        return await self.app(scope, replay, send)

    async def _refuse(self, send) -> None:
        body = dumps({"detail": f"request body too large: the limit is {self.limit:,} bytes"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


def _field_names(model: type[BaseModel]) -> str:
    return ", ".join(repr(name) for name in model.model_fields)


def _state(session) -> dict[str, Any]:
    env = session.env
    return {"session_id": session.session_id, "env_id": env.spec.env_id, "mode": env.mode, "turns": env.turns,
            "turn_budget": env.spec.turn_budget, "done": env.done, "score": env.score(), "u": env.utility()}


def create_app(load_spec: Callable[[str], EnvSpec], ttl_s: float = DEFAULT_TTL_S) -> FastAPI:
    """The app over `load_spec(env_id)` (an EnvSpec, or KeyError for an unknown id)."""
    store = SessionStore(load_spec, ttl_s=ttl_s)
    app = FastAPI(title="vhdplay environments", description=__doc__)
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)
    app.state.store = store

    @app.exception_handler(SessionError)
    async def session_error(request: Request, error: SessionError):
        return JSONResponse({"detail": str(error)}, status_code=code_for(error, HTTP_STATUS))

    @app.exception_handler(RequestValidationError)
    async def bad_body(request: Request, error: RequestValidationError):
        first = error.errors()[0] if error.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        reason = f"malformed request: {where + ': ' if where else ''}{first.get('msg', 'invalid body')}"
        if first.get("type") == "extra_forbidden":
            reason = f"malformed request: unknown field {where!r}; the body takes {_field_names(CreateSession)}"
        return JSONResponse({"detail": " ".join(reason.split())}, status_code=422)

    @app.get("/health")
    async def health():
        return {"status": "ok", "sessions": len(store.sessions)}

    @app.post("/sessions", status_code=201)
    async def create(body: CreateSession):
        spec = store._specs.get(body.env_id) or await run_in_threadpool(store.spec, body.env_id)
        session = store.create(spec, body.mode)
        env = session.env
        return _json({**_state(session), "instructions": env.instructions, "tools": env.tools()}, 201)

    @app.get("/sessions/{session_id}")
    async def state(session_id: str):
        return _json(_state(store.get(session_id)))

    @app.get("/sessions/{session_id}/tools")
    async def tools(session_id: str):
        return _json({"tools": store.get(session_id).env.tools()})

    @app.post("/sessions/{session_id}/call")
    async def call(session_id: str, request: Request):
        # parsed by hand: the hot path of a rollout, and a malformed body still gets one line
        try:
            body = loads(await request.body())
        except (ValueError, RecursionError):
            raise BadRequest("malformed request: the body is not JSON; send {\"name\": ..., "
                             "\"arguments\": {...}}") from None
        if not isinstance(body, dict) or not isinstance(body.get("name"), str):
            raise BadRequest("malformed request: the body must be a JSON object with a string 'name' "
                             "and an object 'arguments'")
        unknown = sorted(set(body) - set(ToolCall.model_fields))
        if unknown:
            raise BadRequest(f"malformed request: unknown field {unknown[0]!r}; the body takes "
                             f"{_field_names(ToolCall)}")
        session, observation = store.call(session_id, body["name"], body.get("arguments"))
        env = session.env
        return Response(f'{{"observation":{observation},"turns":{env.turns},"done":{"true" if env.done else "false"}}}',
                        media_type="application/json")

    @app.get("/sessions/{session_id}/score")
    async def score(session_id: str):
        return _json(_state(store.get(session_id)))

    @app.delete("/sessions/{session_id}")
    async def close(session_id: str):
        return _json({**_state(store.close(session_id)), "closed": True})

    return app


def catalog_loader(warehouse, where: str = "true") -> Callable[[str], EnvSpec]:
    """The catalog's specs, only those `where` selects: an id outside it is as unknown as an id of no environment."""
    from envs.catalog import load_spec

    return lambda env_id: load_spec(env_id, warehouse, where)


def serve(warehouse, host: str = "127.0.0.1", port: int = 8000, ttl_s: float = DEFAULT_TTL_S,
          where: str = "true") -> None:
    import uvicorn

    uvicorn.run(create_app(catalog_loader(warehouse, where), ttl_s), host=host, port=port, log_level="warning",
                access_log=False)
