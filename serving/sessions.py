"""Sessions of remote rollouts: one Environment each, isolated, expiring after an idle time-to-live.

The store of every session server (`vhd serve-envs`, `vhd serve-openenv`). A refusal is a SessionError whose type
says what went wrong and whose text is the one line the client gets; each server maps the type to its own code
(`code_for`): NotFound (an unknown environment or session), Gone (a closed or expired session), EpisodeOver (a call
after the episode ended), BadRequest (an unknown mode or tool, arguments that are not a JSON object, a malformed
message), CapacityReached (`max_sessions` are open), QuotaReached (the client already holds `per_client` of them).
Mistakes within a well-formed call (a missing argument, a value
out of range) are the environment's business: it answers with an error observation and spends a turn, as in process.

A session may be opened before it has an environment (`open`: serve-openenv's reset picks one later) and may carry
the server's own per-session `state`; a session `held` by a live connection (a WebSocket) never expires while held.

Fairness: every session is counted against the client that created it (its peer address, as the server sees it) and
against the one cap, whatever the transport (serve-openenv's WebSockets and its /mcp sessions alike). A client at
its `per_client` quota is refused while other clients still get sessions, so one client cannot hold the whole cap
for the TTL. The peer address is the trust boundary: clients behind one proxy or NAT are one client.
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
SESSIONS_PER_CLIENT = 2_500  # serve-envs' default quota: one client holds at most a quarter of MAX_SESSIONS
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


class Unservable(SessionError):
    """An environment whose catalog row fails its checks when it is loaded (a spec edited after landing, one that is
    not a spec, a family this build does not know): the server's data, not the request, is wrong; a session that
    asked for it stays open."""


class QuotaReached(CapacityReached):
    """The client already has its `per_client` sessions open (the server may have room for other clients)."""


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
    client: str | None = None  # who created it (the peer address): its quota is counted on this key


class SessionStore:
    """The live sessions of one server. `load_spec(env_id)` returns an EnvSpec or raises KeyError.

    `create_hint` ends the message of an unknown session id: how this server's clients create one."""

    def __init__(self, load_spec: Callable[[str], EnvSpec], ttl_s: float = DEFAULT_TTL_S,
                 max_sessions: int = MAX_SESSIONS, clock: Callable[[], float] = time.monotonic,
                 create_hint: str = "POST /sessions", per_client: int | None = None):
        if ttl_s <= 0:
            raise ValueError(f"--session-ttl must be positive, got {ttl_s}")
        if per_client is not None and per_client < 1:
            raise ValueError(f"--sessions-per-client must be at least 1, got {per_client}")
        self.load_spec = load_spec
        self.ttl_s = ttl_s
        self.max_sessions = max_sessions
        self.clock = clock
        self.create_hint = create_hint
        self.per_client = per_client  # None: no quota beyond max_sessions
        self.by_client: dict[str | None, int] = {}  # open sessions per client
        self.sessions: dict[str, Session] = {}
        self.ended: OrderedDict[str, str] = OrderedDict()  # session id -> "closed" | "expired"
        self._specs: dict[str, EnvSpec] = {}

    def spec(self, env_id: str) -> EnvSpec:
        spec = self._specs.get(env_id)
        if spec is None:
            try:
                spec = self.load_spec(env_id)
                Environment(spec, MODES[0])  # a family this build cannot play fails here, once per id
            except KeyError as error:
                raise NotFound(str(error.args[0] if error.args else error)) from None
            except ValueError as error:  # a UserError of the catalog's checks, or pydantic's ValidationError
                raise Unservable(_one_line(env_id, error)) from None
            self._specs[env_id] = spec
        return spec

    def create(self, spec: EnvSpec, mode: str, client: str | None = None) -> Session:
        """A new session playing `spec` in `mode`, counted against `client`'s quota."""
        check_mode(mode)
        self._admit(client)
        return self._add(Session(secrets.token_hex(16), Environment(spec, mode), self.clock(), client=client))

    def open(self, state: Any = None, held: bool = False, client: str | None = None) -> Session:
        """A new session with no environment yet, carrying the server's `state`, counted against `client`'s
        quota."""
        self._admit(client)
        return self._add(Session(secrets.token_hex(16), None, self.clock(), held, state, client))

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

    def _admit(self, client: str | None) -> None:
        self.expire()
        if self.per_client is not None and self.by_client.get(client, 0) >= self.per_client:
            raise QuotaReached(f"this client ({client or 'unknown address'}) already has {self.per_client} open "
                               "sessions, its quota on this server (--sessions-per-client); close one or retry "
                               "later")
        if len(self.sessions) >= self.max_sessions:
            raise CapacityReached(f"the server is at capacity ({self.max_sessions} sessions are open); close one "
                                  "or retry later")

    def _add(self, session: Session) -> Session:
        self.sessions[session.session_id] = session
        self.by_client[session.client] = self.by_client.get(session.client, 0) + 1
        return session

    def _end(self, session_id: str, how: str) -> None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            left = self.by_client.get(session.client, 0) - 1
            if left > 0:
                self.by_client[session.client] = left
            else:
                self.by_client.pop(session.client, None)
        self.ended[session_id] = how
        while len(self.ended) > _ENDED_KEPT:
            self.ended.popitem(last=False)


def _one_line(env_id: str, error: ValueError) -> str:
    from schemas.errors import UserError

    if isinstance(error, UserError) and "\n" not in str(error):
        return str(error) if env_id in str(error) else f"environment {env_id} cannot be served: {error}"
    return (f"environment {env_id} cannot be served: its catalog row is not a valid spec; `vhd warehouse check` "
            "lists such rows")


def check_mode(mode: Any) -> str:
    if mode not in MODES:
        raise BadRequest(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    return mode
