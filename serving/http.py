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

Fairness (see serving.sessions): each client (peer address) holds at most `per_client` of the `max_sessions`
sessions; one more is 429 for that client only. A request body must arrive whole within `body_timeout_s` of its
headers, or the request is answered 408 and the connection closed; a client that goes away mid-body is one log line.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from schemas import payload
from schemas.envspec import EnvSpec
from schemas.payload import MAX_BYTES, PayloadError
from schemas.strict_json import dumps
from serving import sessions
from serving.sessions import (
    DEFAULT_TTL_S,
    MAX_SESSIONS,
    SESSIONS_PER_CLIENT,
    BadRequest,
    SessionError,
    SessionStore,
    code_for,
)

MAX_BODY_BYTES = MAX_BYTES  # schemas.payload's limit, 1 MiB: a tool call is a few hundred bytes
BODY_TIMEOUT_S = 5.0  # a whole body within this of its headers: a tool call's body is one packet
log = logging.getLogger("uvicorn.error")  # the server's own log (uvicorn configures its handler and level)
HTTP_STATUS = {sessions.NotFound: 404, sessions.Gone: 410, sessions.EpisodeOver: 409, BadRequest: 422,
               sessions.CapacityReached: 429, sessions.Unservable: 503, SessionError: 400}


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
    """ASGI middleware: 413 for a request body over `limit` bytes, without holding more than `limit` in memory;
    408 for a body that has not arrived whole `timeout_s` after its headers.

    A declared Content-Length over the limit is refused before any of the body is read (the server holds the
    body to that length); any other body is read up to the limit, then handed on, or refused as soon as it passes
    it. A client that stalls mid-body is answered 408 and its connection closed, not held open; one that goes away
    mid-body is one warning line (the app never sees a half body, so no ClientDisconnect traceback).
    """

    def __init__(self, app, limit: int = MAX_BODY_BYTES, timeout_s: float = BODY_TIMEOUT_S) -> None:
        self.app, self.limit, self.timeout_s = app, limit, timeout_s

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await self._refuse(send)
        chunks, size = [], 0
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        while True:
            try:
                message = await asyncio.wait_for(receive(), deadline - asyncio.get_running_loop().time())
            except TimeoutError:
                log.warning("client %s: request body of %s %s not whole after %g s (%d bytes came); answered 408",
                            _peer(scope), scope["method"], scope["path"], self.timeout_s, size)
                return await self._refuse(send, 408, f"request body not received within {self.timeout_s:g} s; "
                                                     "send the whole body at once")
            if message["type"] != "http.request":  # the client went away
                log.warning("client %s went away before the request body of %s %s ended (%d bytes came)",
                            _peer(scope), scope["method"], scope["path"], size)
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

    async def _refuse(self, send, status: int = 413, detail: str = "") -> None:
        detail = detail or f"request body too large: the limit is {self.limit:,} bytes"
        body = dumps({"detail": detail}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


def _peer(scope) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "unknown"


def client_of(request: Request) -> str | None:
    """The key a client's sessions are counted on: its peer address (no port: one host is one client)."""
    return request.client.host if request.client else None


def _field_names(model: type[BaseModel]) -> str:
    return ", ".join(repr(name) for name in model.model_fields)


def _body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAPI entry of a body the handler reads by hand (through the guard), so /docs still shows it."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": model.model_json_schema()}}}}


CREATE_SHAPE = "a JSON object with a string 'env_id' and, if you like, a string 'mode'"
CALL_SHAPE = "a JSON object with a string 'name' and an object 'arguments'"


def _read_body(raw: bytes, model: type[BaseModel], shape: str) -> dict[str, Any]:
    """A hand-read body: through schemas.payload's guard (a 5,000-digit integer, nesting 100,000 deep, bytes that
    are not UTF-8 or not JSON: each one line naming the limit), a JSON object, no field `model` does not take.
    Every violation is a BadRequest (422) of one line that says what the body must be."""
    try:
        body = payload.read(raw, "the body")  # the one guard of every adapter
    except PayloadError as error:
        raise BadRequest(f"malformed request: {error}; the body must be {shape}") from None
    if not isinstance(body, dict):
        raise BadRequest(f"malformed request: the body must be {shape}")
    unknown = sorted(set(body) - set(model.model_fields))
    if unknown:
        raise BadRequest(f"malformed request: unknown field {unknown[0]!r}; the body takes {_field_names(model)}")
    return body


def _create_body(raw: bytes) -> CreateSession:
    """POST /sessions' body, its fields checked: a missing or non-string env_id or mode is one line."""
    body = _read_body(raw, CreateSession, CREATE_SHAPE)
    if "env_id" not in body:
        raise BadRequest(f"malformed request: the body has no env_id; it must be {CREATE_SHAPE}")
    for field in CreateSession.model_fields:
        if field in body and not isinstance(body[field], str):
            raise BadRequest(f"malformed request: {field} must be a string; the body must be {CREATE_SHAPE}")
    return CreateSession(**body)


def _state(session) -> dict[str, Any]:
    env = session.env
    return {"session_id": session.session_id, "env_id": env.spec.env_id, "mode": env.mode, "turns": env.turns,
            "turn_budget": env.spec.turn_budget, "done": env.done, "score": env.score(), "u": env.utility()}


def create_app(load_spec: Callable[[str], EnvSpec], ttl_s: float = DEFAULT_TTL_S, max_sessions: int = MAX_SESSIONS,
               per_client: int | None = SESSIONS_PER_CLIENT, body_timeout_s: float = BODY_TIMEOUT_S) -> FastAPI:
    """The app over `load_spec(env_id)` (an EnvSpec, or KeyError for an unknown id): at most `max_sessions`
    sessions, `per_client` of them per client (None: no quota), each request body whole within `body_timeout_s`."""
    store = SessionStore(load_spec, ttl_s=ttl_s, max_sessions=max_sessions, per_client=per_client)
    app = FastAPI(title="vhdplay environments", description=__doc__)
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES, timeout_s=body_timeout_s)
    app.state.store = store

    @app.exception_handler(SessionError)
    async def session_error(request: Request, error: SessionError):
        return JSONResponse({"detail": str(error)}, status_code=code_for(error, HTTP_STATUS))

    @app.get("/health")
    async def health():
        return {"status": "ok", "sessions": len(store.sessions)}

    @app.post("/sessions", status_code=201, openapi_extra=_body_schema(CreateSession))
    async def create(request: Request):
        body = _create_body(await request.body())
        spec = store._specs.get(body.env_id) or await run_in_threadpool(store.spec, body.env_id)
        session = store.create(spec, body.mode, client_of(request))
        env = session.env
        return _json({**_state(session), "instructions": env.instructions, "tools": env.tools()}, 201)

    @app.get("/sessions/{session_id}")
    async def state(session_id: str):
        return _json(_state(store.get(session_id)))

    @app.get("/sessions/{session_id}/tools")
    async def tools(session_id: str):
        return _json({"tools": store.get(session_id).env.tools()})

    @app.post("/sessions/{session_id}/call", openapi_extra=_body_schema(ToolCall))
    async def call(session_id: str, request: Request):
        # parsed by hand: the hot path of a rollout, and a malformed body still gets one line
        body = _read_body(await request.body(), ToolCall, CALL_SHAPE)
        if not isinstance(body.get("name"), str):
            raise BadRequest(f"malformed request: the body must be {CALL_SHAPE}")
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
          where: str = "true", max_sessions: int = MAX_SESSIONS, per_client: int | None = SESSIONS_PER_CLIENT,
          body_timeout_s: float = BODY_TIMEOUT_S) -> None:
    import uvicorn

    app = create_app(catalog_loader(warehouse, where), ttl_s, max_sessions, per_client, body_timeout_s)
    # proxy_headers off: a client is its TCP peer, never what an X-Forwarded-For header claims (the quota's key)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False, proxy_headers=False)
