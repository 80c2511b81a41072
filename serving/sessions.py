"""Sessions of remote rollouts: one Environment each, isolated, expiring after an idle time-to-live.

Every failure is a SessionError carrying the HTTP status and a one-line reason: 404 unknown environment or
session, 410 a closed or expired session, 409 a call after the episode ended, 422 an unknown tool or arguments
that are not a JSON object. Mistakes within a well-formed call (a missing argument, a value out of range) are
the environment's business: it answers with an error observation and spends a turn, as in process.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from envs.environment import Environment
from schemas.envspec import MODES, EnvSpec

DEFAULT_TTL_S = 600.0
MAX_SESSIONS = 10_000
_ENDED_KEPT = 10_000  # ids of closed or expired sessions remembered to answer 410 instead of 404


class SessionError(Exception):
    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass
class Session:
    session_id: str
    env: Environment
    last_used: float = field(default=0.0)


class SessionStore:
    """The live sessions of one server. `load_spec(env_id)` returns an EnvSpec or raises KeyError."""

    def __init__(self, load_spec: Callable[[str], EnvSpec], ttl_s: float = DEFAULT_TTL_S,
                 max_sessions: int = MAX_SESSIONS, clock: Callable[[], float] = time.monotonic):
        if ttl_s <= 0:
            raise ValueError(f"--session-ttl must be positive, got {ttl_s}")
        self.load_spec = load_spec
        self.ttl_s = ttl_s
        self.max_sessions = max_sessions
        self.clock = clock
        self.sessions: dict[str, Session] = {}
        self.ended: OrderedDict[str, str] = OrderedDict()  # session id -> "closed" | "expired"
        self._specs: dict[str, EnvSpec] = {}

    def spec(self, env_id: str) -> EnvSpec:
        spec = self._specs.get(env_id)
        if spec is None:
            try:
                spec = self.load_spec(env_id)
            except KeyError as error:
                raise SessionError(404, str(error.args[0] if error.args else error)) from None
            self._specs[env_id] = spec
        return spec

    def create(self, spec: EnvSpec, mode: str) -> Session:
        if mode not in MODES:
            raise SessionError(422, f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        self.expire()
        if len(self.sessions) >= self.max_sessions:
            raise SessionError(429, f"{self.max_sessions} sessions are open; close some or wait for them to expire")
        session = Session(secrets.token_hex(16), Environment(spec, mode), self.clock())
        self.sessions[session.session_id] = session
        return session

    def get(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        now = self.clock()
        if session is not None and now - session.last_used > self.ttl_s:
            self._end(session_id, "expired")
            session = None
        if session is None:
            how = self.ended.get(session_id)
            if how == "closed":
                raise SessionError(410, f"session {session_id} was closed; create a new one")
            if how == "expired":
                raise SessionError(410, f"session {session_id} expired after {self.ttl_s:g} s idle; create a new one")
            raise SessionError(404, f"unknown session {session_id!r}; create one with POST /sessions")
        session.last_used = now
        return session

    def call(self, session_id: str, name: str, arguments) -> tuple[Session, str]:
        """The observation (JSON text) of one tool call in a session."""
        session = self.get(session_id)
        env = session.env
        if env.done:
            raise SessionError(409, f"the episode of session {session_id} is over (after {env.turns} turns); "
                                    "read its score or close it")
        if name not in env.tool_names:
            raise SessionError(422, f"unknown tool {name!r}; available tools: {', '.join(sorted(env.tool_names))}")
        if arguments is not None and not isinstance(arguments, dict):
            raise SessionError(422, f"arguments of {name!r} must be a JSON object, got {type(arguments).__name__}")
        return session, env.call(name, arguments)

    def close(self, session_id: str) -> Session:
        session = self.get(session_id)
        self._end(session_id, "closed")
        return session

    def expire(self) -> int:
        """End every session idle for longer than the TTL; returns how many."""
        now = self.clock()
        stale = [sid for sid, s in self.sessions.items() if now - s.last_used > self.ttl_s]
        for sid in stale:
            self._end(sid, "expired")
        return len(stale)

    def _end(self, session_id: str, how: str) -> None:
        self.sessions.pop(session_id, None)
        self.ended[session_id] = how
        while len(self.ended) > _ENDED_KEPT:
            self.ended.popitem(last=False)
