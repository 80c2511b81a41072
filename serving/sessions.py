"""Sessions of remote rollouts: one Environment each, isolated, expiring after an idle time-to-live.

The store of every session server (`vhd serve-envs`, `vhd serve-openenv`). A refusal is a SessionError whose type
says what went wrong and whose text is the one line the client gets; each server maps the type to its own code
(`code_for`): NotFound (an unknown environment or session), Gone (a closed or expired session), EpisodeOver (a call
after the episode ended), BadRequest (an unknown mode or tool, arguments that are not a JSON object, a malformed
message), CapacityReached (`max_sessions` are open). Mistakes within a well-formed call (a missing argument, a value
out of range) are the environment's business: it answers with an error observation and spends a turn, as in process.

A session may be opened before it has an environment (`open`: serve-openenv's reset picks one later) and may carry
the server's own per-session `state`; a session `held` by a live connection (a WebSocket) never expires while held.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from envs.environment import Environment
from schemas.envspec import MODES, EnvSpec

DEFAULT_TTL_S = 600.0
MAX_SESSIONS = 10_000
_ENDED_KEPT = 10_000  # ids of closed or expired sessions remembered to answer "gone" instead of "unknown"

Code = TypeVar("Code")


class SessionError(Exception):
    """A request a session server refuses; its text is the one line the client gets, its type picks the code."""

    @property
    def reason(self) -> str:
        return str(self)


class BadRequest(SessionError):
    """A message the server cannot act on as sent: an unknown mode or tool, a malformed body or field."""


class NotFound(SessionError):
    """An id the server does not hold: an environment (or one outside the served selection), a session, a split."""


class Gone(NotFound):
    """A session that was closed or expired."""


class EpisodeOver(SessionError):
    """A call in a session whose episode has ended, or that has no episode yet."""


class CapacityReached(SessionError):
    """`max_sessions` sessions are open."""


def code_for(error: BaseException, codes: Mapping[type[BaseException], Code]) -> Code:
    """The code `codes` gives the most specific of `error`'s types it names (KeyError if it names none)."""
    for kind in type(error).__mro__:
        if kind in codes:
            return codes[kind]
    raise KeyError(type(error).__name__)


@dataclass
class Session:
    session_id: str
    env: Environment | None  # None until the server picks the environment (serve-openenv: on the first reset)
    last_used: float = field(default=0.0)
    held: bool = False  # a live connection holds it: it does not expire while held
    state: Any = None  # what the server keeps beside the environment


class SessionStore:
    """The live sessions of one server. `load_spec(env_id)` returns an EnvSpec or raises KeyError.

    `create_hint` ends the message of an unknown session id: how this server's clients create one."""

    def __init__(self, load_spec: Callable[[str], EnvSpec], ttl_s: float = DEFAULT_TTL_S,
                 max_sessions: int = MAX_SESSIONS, clock: Callable[[], float] = time.monotonic,
                 create_hint: str = "POST /sessions"):
        if ttl_s <= 0:
            raise ValueError(f"--session-ttl must be positive, got {ttl_s}")
        self.load_spec = load_spec
        self.ttl_s = ttl_s
        self.max_sessions = max_sessions
        self.clock = clock
        self.create_hint = create_hint
        self.sessions: dict[str, Session] = {}
        self.ended: OrderedDict[str, str] = OrderedDict()  # session id -> "closed" | "expired"
        self._specs: dict[str, EnvSpec] = {}

    def spec(self, env_id: str) -> EnvSpec:
        spec = self._specs.get(env_id)
        if spec is None:
            try:
                spec = self.load_spec(env_id)
            except KeyError as error:
                raise NotFound(str(error.args[0] if error.args else error)) from None
            self._specs[env_id] = spec
        return spec

    def create(self, spec: EnvSpec, mode: str) -> Session:
        """A new session playing `spec` in `mode`."""
        check_mode(mode)
        self._admit()
        return self._add(Session(secrets.token_hex(16), Environment(spec, mode), self.clock()))

    def open(self, state: Any = None, held: bool = False) -> Session:
        """A new session with no environment yet, carrying the server's `state`."""
        self._admit()
        return self._add(Session(secrets.token_hex(16), None, self.clock(), held, state))

    def get(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        now = self.clock()
        if session is not None and not session.held and now - session.last_used > self.ttl_s:
            self._end(session_id, "expired")
            session = None
        if session is None:
            how = self.ended.get(session_id)
            if how == "closed":
                raise Gone(f"session {session_id} was closed; create a new one")
            if how == "expired":
                raise Gone(f"session {session_id} expired after {self.ttl_s:g} s idle; create a new one")
            raise NotFound(f"unknown session {session_id!r}; create one with {self.create_hint}")
        session.last_used = now
        return session

    def hold(self, session_id: str) -> Session:
        """The session, held by a connection until `release`: it does not expire meanwhile."""
        session = self.get(session_id)
        if session.held:
            raise BadRequest(f"session {session_id} already has an attached connection")
        session.held = True
        return session

    def release(self, session_id: str) -> None:
        """Let a held session expire again, `ttl_s` from now (nothing if it is closed)."""
        session = self.sessions.get(session_id)
        if session is not None:
            session.held, session.last_used = False, self.clock()

    def call(self, session_id: str, name: str, arguments) -> tuple[Session, str]:
        """The observation (JSON text) of one tool call in a session."""
        session = self.get(session_id)
        env = session.env
        if env.done:
            raise EpisodeOver(f"the episode of session {session_id} is over (after {env.turns} turns); "
                              "read its score or close it")
        if name not in env.tool_names:
            raise BadRequest(f"unknown tool {name!r}; available tools: {', '.join(sorted(env.tool_names))}")
        if arguments is not None and not isinstance(arguments, dict):
            raise BadRequest(f"arguments of {name!r} must be a JSON object, got {type(arguments).__name__}")
        return session, env.call(name, arguments)

    def close(self, session_id: str) -> Session:
        session = self.get(session_id)
        self._end(session_id, "closed")
        return session

    def discard(self, session_id: str) -> None:
        """Close a session if it is still open (a connection that owned it went away)."""
        if session_id in self.sessions:
            self._end(session_id, "closed")

    def expire(self) -> int:
        """End every session idle for longer than the TTL and not held; returns how many."""
        now = self.clock()
        stale = [sid for sid, s in self.sessions.items() if not s.held and now - s.last_used > self.ttl_s]
        for sid in stale:
            self._end(sid, "expired")
        return len(stale)

    def _admit(self) -> None:
        self.expire()
        if len(self.sessions) >= self.max_sessions:
            raise CapacityReached(f"the server is at capacity ({self.max_sessions} sessions are open); close one "
                                  "or retry later")

    def _add(self, session: Session) -> Session:
        self.sessions[session.session_id] = session
        return session

    def _end(self, session_id: str, how: str) -> None:
        self.sessions.pop(session_id, None)
        self.ended[session_id] = how
        while len(self.ended) > _ENDED_KEPT:
            self.ended.popitem(last=False)


def check_mode(mode: Any) -> str:
    if mode not in MODES:
        raise BadRequest(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    return mode
