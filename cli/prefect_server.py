"""The local Prefect server: started once in the background by the first command that needs an API, then reused.

Without a configured Prefect API (`PREFECT_API_URL`, in the environment or the active Prefect profile), Prefect
would start a temporary server inside every command: 20-30 s each, and on a cold machine longer than Prefect's
own 20 s wait. Instead the first `vhd generate`, `vhd eval` or `vhd serve` starts `prefect server start` on
127.0.0.1 as a detached process (its own session: Ctrl-C of the command does not stop it), with its state
(SQLite database, log, the record of where it listens) under the user's data folder, and exports its URL as
`PREFECT_API_URL` before Prefect is imported. Later commands find the record, check the process and its
health endpoint, and reuse it. A file lock makes two commands started together start one server.

The server listens on port 4200, or a free port when 4200 is taken, unless a port is asked for (`vhd generate
--prefect-port PORT`, `vhd server start --prefect-port PORT`, or `VHD_PREFECT_PORT` for every command): then on
that port only, or a one-line refusal when another program holds it or the running local server listens elsewhere.

This module imports nothing of Prefect's: it must run before the URL is decided.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from platformkit.processes import free_port, group_alive, held_flock, pid_alive, port_free
from schemas.errors import UserError

if TYPE_CHECKING:  # the rest is imported where used: every vhd command imports this module
    import subprocess

ENV_HOME = "VHD_HOME"
ENV_TIMEOUT = "VHD_PREFECT_START_TIMEOUT"
ENV_PORT = "VHD_PREFECT_PORT"
PORT_FLAG = "--prefect-port"
DEFAULT_TIMEOUT_S = 180.0
PREFERRED_PORT = 4200
RECORD, LOG, LOCK, DATABASE = "server.json", "server.log", "start.lock", "prefect.db"
WHAT_TO_DO = f"raise {ENV_TIMEOUT} or set PREFECT_API_URL to a running server"
# Task runs reach the server as events, which its task run recorder writes into the database and its event persister
# keeps for the UI's event feed. Prefect's defaults write each event in a transaction of its own for the recorder
# (batch size 1: about 35 ms of the server's CPU per task run) and 20 events per transaction for the persister, which
# on a small machine compete with generation for a core. The local server writes them in batches of 200, the task
# runs at least once a second (a task run shows in the UI up to a second later), the events at least every 5 s
# (benchmarks/README.md: the server's CPU seconds).
SERVER_BATCHING = {"PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "200",
                   "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL": "1",
                   "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_BATCH_SIZE": "200"}


class ServerStartError(Exception):
    """The local server could not be started or reached: one line for the user, exit code 1."""


def data_home() -> Path:
    """The user's vhdplay data folder: $VHD_HOME, else $XDG_DATA_HOME/vhdplay, else ~/.local/share/vhdplay."""
    if os.environ.get(ENV_HOME):
        return Path(os.environ[ENV_HOME]).expanduser()
    if os.environ.get("XDG_DATA_HOME"):
        return Path(os.environ["XDG_DATA_HOME"]).expanduser() / "vhdplay"
    return Path.home() / ".local" / "share" / "vhdplay"


def server_home() -> Path:
    """The local server's PREFECT_HOME: its database, log, lock and record."""
    return data_home() / "prefect-server"


def configured_api_url() -> str | None:
    """PREFECT_API_URL from the environment, else from the active Prefect profile; None when neither names one."""
    url = os.environ.get("PREFECT_API_URL", "").strip()
    if url:
        return url
    import tomllib

    prefect_home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    path = Path(os.environ.get("PREFECT_PROFILES_PATH") or prefect_home / "profiles.toml").expanduser()
    try:
        profiles = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    active = os.environ.get("PREFECT_PROFILE") or profiles.get("active")
    profile = profiles.get("profiles", {}).get(active, {}) if active else {}
    url = profile.get("PREFECT_API_URL") if isinstance(profile, dict) else None
    return str(url).strip() if url and str(url).strip() else None


def start_timeout() -> float:
    text = os.environ.get(ENV_TIMEOUT, "").strip()
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise ServerStartError(f"{ENV_TIMEOUT} must be a positive number of seconds, got {text!r}")
    return value


@dataclass(frozen=True)
class Port:
    """A port asked for, and who asked (the flag or the variable), for the lines that name it."""

    number: int
    source: str


def parse_port(text: str, source: str) -> Port:
    """A port number (1 to 65535) given by `source`; UserError with one line naming the fix otherwise."""
    try:
        number = int(text.strip())
    except (ValueError, AttributeError):
        number = 0
    if not 0 < number < 65536:
        raise UserError(f"{source} must be a port number from 1 to 65535, got {text!r}; e.g. {source}"
                        f"{'=' if source == ENV_PORT else ' '}4201 (unset: {PREFERRED_PORT}, or a free port "
                        "when it is taken)")
    return Port(number, source)


def asked_port(flag: str | None = None) -> Port | None:
    """The port asked for the local server: the --prefect-port value `flag`, else $VHD_PREFECT_PORT, else None
    (then port 4200, or a free one when it is taken). UserError with one line for a bad value."""
    if flag is not None:
        return parse_port(flag, PORT_FLAG)
    text = os.environ.get(ENV_PORT, "").strip()
    return parse_port(text, ENV_PORT) if text else None


def _asked_port(port: Port | None) -> Port | None:
    """`port`, else the variable's (a bad value as a ServerStartError: the commands without the flag)."""
    if port is not None:
        return port
    try:
        return asked_port()
    except ValueError as error:
        raise ServerStartError(str(error)) from None


def _check_port(record: Record, port: Port | None) -> Record:
    """The running server when it listens where asked; else the one line that says how to move it."""
    if port is not None and record.port != port.number:
        raise ServerStartError(f"{port.source} asks for port {port.number}, but the local Prefect server already "
                               f"runs on port {record.port} ({record.url}, pid {record.pid}); run `vhd server stop` "
                               f"to start it on {port.number}, or leave {port.source} unset to use it")
    return record


def _port_taken(port: Port) -> ServerStartError:
    return ServerStartError(f"port {port.number} on 127.0.0.1 ({port.source}) is in use by another program or not "
                            f"allowed; choose another {port.source}, leave it unset (port {PREFERRED_PORT}, or a "
                            "free one when it is taken), or set PREFECT_API_URL to a running server")


@dataclass
class Record:
    """Where the local server listens, as written to server.json."""

    url: str
    port: int
    pid: int
    home: str
    log: str
    started_at: str

    @property
    def ui(self) -> str:
        return self.url.removesuffix("/api")

    @classmethod
    def read(cls, home: Path) -> Record | None:
        try:
            data = json.loads((home / RECORD).read_text())
            return cls(url=str(data["url"]), port=int(data["port"]), pid=int(data["pid"]), home=str(data["home"]),
                       log=str(data["log"]), started_at=str(data["started_at"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def write(self) -> None:
        path = Path(self.home) / RECORD
        partial = path.with_name(f".{RECORD}.{os.getpid()}")
        partial.write_text(json.dumps(self.__dict__, indent=1) + "\n")
        partial.replace(path)


def _remove_record(home: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (home / RECORD).unlink()


def answers(url: str, timeout: float = 2.0) -> bool:
    """Whether a Prefect API answers GET {url}/health (no proxy: the server is on the loopback)."""
    import urllib.error
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{url}/health", timeout=timeout) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError, ValueError):
        return False


def alive(pid: int) -> bool:
    """Whether a process with this id exists and, where /proc shows it, is a `prefect server` (not a reused id)."""
    if not pid_alive(pid):
        return False
    cmdline = Path(f"/proc/{pid}/cmdline")
    try:
        words = cmdline.read_bytes().split(b"\0")
    except FileNotFoundError:
        return not Path("/proc/self").exists()  # no /proc (macOS): trust the signal
    except OSError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError, IndexError):
        if stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":  # a zombie is gone, only not yet reaped
            return False
    return any(w.endswith(b"prefect") for w in words) and b"server" in words


def terminate(pid: int, process: subprocess.Popen | None = None, grace_s: float = 15.0) -> None:
    """Stop the server and its children: SIGTERM to its process group, wait up to grace_s, then SIGKILL."""
    try:
        group = os.getpgid(pid) == pid  # started in its own session: the group is the server and its children
    except ProcessLookupError:
        return

    def send(sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if group:
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)

    def gone(wait_s: float) -> bool:
        deadline = time.monotonic() + wait_s
        while True:
            if process is not None:
                process.poll()  # reap our own child, else it lingers as a zombie
            if not (group_alive(pid) if group else alive(pid)):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)

    send(signal.SIGTERM)
    if not gone(grace_s):
        send(signal.SIGKILL)
        gone(5.0)


def running(home: Path | None = None) -> Record | None:
    """The recorded server when its process lives and its health endpoint answers, else None."""
    home = home or server_home()
    record = Record.read(home)
    if record is not None and alive(record.pid) and answers(record.url):
        return record
    return None


class _Progress:
    """One progress line on stderr while waiting: redrawn in place on a terminal, every 15 s otherwise."""

    def __init__(self, text: str) -> None:
        self.text, self.started, self.tty = text, time.monotonic(), sys.stderr.isatty()
        self.shown, self.drawn = 0.0, False

    def tick(self) -> None:
        elapsed = time.monotonic() - self.started
        if self.tty and (not self.drawn or elapsed - self.shown >= 1.0):
            sys.stderr.write(f"\r{self.text} ... {elapsed:.0f} s\033[K")
            sys.stderr.flush()
            self.shown, self.drawn = elapsed, True
        elif not self.tty and elapsed - self.shown >= 15.0:
            print(f"{self.text} ... {elapsed:.0f} s", file=sys.stderr, flush=True)
            self.shown = elapsed

    def clear(self) -> None:
        if self.drawn:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


@contextlib.contextmanager
def _start_lock(home: Path, wait_s: float):
    """Hold the home's start lock (fcntl.flock: released by the OS if the holder dies)."""
    home.mkdir(parents=True, exist_ok=True)
    progress = _Progress("waiting for another vhd command that is starting the local Prefect server")

    def busy() -> ServerStartError:
        progress.clear()
        return ServerStartError(f"another command has been starting the local Prefect server for over "
                                f"{wait_s:.0f} s (lock: {home / LOCK}); {WHAT_TO_DO}")

    with held_flock(home / LOCK, wait_s, progress.tick, busy):
        progress.clear()
        yield


def _prefect_command(port: int) -> list[str]:
    executable = Path(sys.executable).parent / "prefect"
    base = [str(executable)] if executable.exists() else [sys.executable, "-m", "prefect"]
    return [*base, "server", "start", "--host", "127.0.0.1", "--port", str(port)]


def _server_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PREFECT_PROFILE")}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false", PYTHONUNBUFFERED="1")
    for name, value in SERVER_BATCHING.items():  # a user's own setting wins
        env.setdefault(name, value)
    for name in ("PREFECT_LOGGING_LEVEL", "PREFECT_SERVER_LOGGING_LEVEL"):  # the CLI's own quieting, not the server's
        env.pop(name, None)
    return env


def _last_log_line(log: Path) -> str:
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""


def _wait_for(record: Record, process: subprocess.Popen | None, deadline: float, progress: _Progress) -> str:
    """'ok', 'exited' or 'timeout'."""
    while True:
        if answers(record.url, timeout=1.0):
            return "ok"
        if process is not None and process.poll() is not None:
            return "exited"
        if process is None and not alive(record.pid):
            return "exited"
        if time.monotonic() >= deadline:
            return "timeout"
        progress.tick()
        time.sleep(min(0.25, max(0.0, deadline - time.monotonic())))


def _launch(home: Path, port: int) -> tuple[Record, subprocess.Popen]:
    import datetime as dt
    import subprocess

    log_path = home / LOG
    with open(log_path, "ab") as log:
        log.write(f"\n--- {dt.datetime.now(dt.UTC).isoformat()} starting on port {port}\n".encode())
        log.flush()
        process = subprocess.Popen(_prefect_command(port), env=_server_env(home), cwd=home, stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    record = Record(url=f"http://127.0.0.1:{port}/api", port=port, pid=process.pid, home=str(home),
                    log=str(log_path), started_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    record.write()  # at once: a command that follows (or `vhd server stop`) finds the process even while it starts
    return record, process


def _start(home: Path, timeout: float, asked: Port | None = None) -> Record:
    first = not (home / DATABASE).exists()
    text = "starting the local Prefect server" + (" (first start creates its database)" if first else "")
    if asked is not None:
        if not port_free(asked.number, reuse=True):
            raise _port_taken(asked)
        port = asked.number
    else:
        port = PREFERRED_PORT if port_free(PREFERRED_PORT) else free_port()
    progress = _Progress(text)
    deadline = time.monotonic() + timeout
    for attempt in range(2):
        record, process = _launch(home, port)
        outcome = _wait_for(record, process, deadline, progress)
        if outcome == "ok":
            progress.clear()
            return record
        terminate(record.pid, process, grace_s=5.0)
        _remove_record(home)
        log_line = _last_log_line(Path(record.log))
        if outcome == "exited" and "already in use" in log_line and asked is not None:
            progress.clear()
            raise _port_taken(asked)  # another program took it between our check and the server's bind
        if outcome == "exited" and attempt == 0 and "already in use" in log_line and time.monotonic() < deadline:
            port = free_port()  # another program took the port between our check and the server's bind
            continue
        progress.clear()
        if outcome == "timeout":
            raise ServerStartError(f"the local Prefect server did not answer within {timeout:g} s "
                                   f"(log: {record.log}); {WHAT_TO_DO}")
        raise ServerStartError(f"the local Prefect server exited while starting (code {process.returncode}"
                               f"{': ' + log_line if log_line else ''}; log: {record.log}); fix the cause or set "
                               "PREFECT_API_URL to a running server")
    raise AssertionError("unreachable")


def ensure_server(timeout: float | None = None, port: Port | None = None) -> Record:
    """The local server, reused when its record, process and health check agree, else started (under a lock).

    `port` (else $VHD_PREFECT_PORT) is where it must listen: a server running on another port is refused with one
    line, not reused."""
    home = server_home()
    port = _asked_port(port)
    found = running(home)
    if found is not None:
        return _check_port(found, port)
    timeout = start_timeout() if timeout is None else timeout
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ServerStartError(f"cannot create the local Prefect server's folder {home} ({error.strerror or error}); "
                               f"set {ENV_HOME} to a writable folder or PREFECT_API_URL to a running server") from None
    with _start_lock(home, wait_s=timeout + 60):
        record = Record.read(home)
        if record is not None and alive(record.pid):
            if answers(record.url):  # started by the command that held the lock
                return _check_port(record, port)
            # a server still starting (its starter was interrupted) or hung: give it the wait, then replace it
            progress = _Progress("waiting for the local Prefect server to answer")
            outcome = _wait_for(record, None, time.monotonic() + timeout, progress)
            progress.clear()
            if outcome == "ok":
                return _check_port(record, port)
            terminate(record.pid)
        _remove_record(home)  # stale: the process is gone or did not answer
        started = time.monotonic()
        record = _start(home, timeout, port)
        print(f"started the local Prefect server in {time.monotonic() - started:.0f} s: {record.url} "
              f"(UI {record.ui}; `vhd server status`, `vhd server stop`)", file=sys.stderr, flush=True)
        return record


def use_local_server(start: bool = True, port: Port | None = None) -> str | None:
    """Export PREFECT_API_URL for this process: the configured one stays; else the local server's (started if
    `start`, on `port`, else $VHD_PREFECT_PORT's, else 4200 or a free one). Must run before Prefect is imported:
    Prefect reads its settings once, at import. A --prefect-port beside a configured PREFECT_API_URL is refused
    (it would be ignored)."""
    if _configured_beside(port):
        return None
    record = ensure_server(port=port) if start else running()
    if record is None:
        return None
    os.environ["PREFECT_API_URL"] = record.url
    return record.url


def _configured_beside(port: Port | None) -> str | None:
    """The configured PREFECT_API_URL (vhd uses that server, so no port applies), or None; a --prefect-port given
    beside it is refused with one line: it would be ignored."""
    configured = configured_api_url()
    if configured and port is not None and port.source == PORT_FLAG:
        raise ServerStartError(f"{PORT_FLAG} chooses the local Prefect server's port, but PREFECT_API_URL is set "
                               f"({_masked(configured)}) and vhd uses that server; drop {PORT_FLAG} or unset "
                               "PREFECT_API_URL")
    return configured


def stop_server(home: Path | None = None) -> str:
    """Stop the recorded server (its whole process group) and remove the record; a line saying what happened."""
    home = home or server_home()
    record = Record.read(home)
    if record is None:
        return f"no local Prefect server is recorded in {home}; nothing to stop"
    if not alive(record.pid):
        _remove_record(home)
        return f"the local Prefect server (pid {record.pid}) was not running; removed its record"
    terminate(record.pid)
    if alive(record.pid):
        return f"the local Prefect server (pid {record.pid}) did not stop; see its log {record.log}"
    _remove_record(home)
    return f"stopped the local Prefect server (pid {record.pid}, {record.url})"


def status_lines(home: Path | None = None) -> tuple[list[str], bool]:
    """What `vhd server status` prints, and whether all is well (False: a live process that does not answer)."""
    home = home or server_home()
    lines = []
    configured = configured_api_url()
    if configured:
        lines.append(f"PREFECT_API_URL is set ({_masked(configured)}): vhd commands use that server, not the "
                     "local one")
    record = Record.read(home)
    if record is None:
        lines.append(f"no local Prefect server is recorded in {home}")
        if not configured:
            lines.append("the first `vhd generate` (or `vhd server start`) starts one")
        return lines, True
    is_alive = alive(record.pid)
    healthy = is_alive and answers(record.url)
    state = "running, answers" if healthy else ("running, does NOT answer" if is_alive else "not running (stale "
                                                                                            "record)")
    lines += [f"local Prefect server: {state}",
              f"  api:     {record.url}",
              f"  ui:      {record.ui}",
              f"  pid:     {record.pid} (started {record.started_at})",
              f"  home:    {record.home}",
              f"  log:     {record.log}"]
    if healthy and not configured:
        lines.append(f"prefect's own CLI reaches it with: export PREFECT_API_URL={record.url}")
    return lines, healthy or not is_alive


def _masked(url: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=f"***@{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")))


def cmd_server(args) -> int:
    """`vhd server status|start|stop`."""
    if args.prefect_port is not None and args.action != "start":
        raise UserError(f"{PORT_FLAG} applies to `vhd server start` (and `vhd generate`); `vhd server "
                        f"{args.action}` takes no port")
    if args.action == "stop":
        print(stop_server())
        return 0
    if args.action == "start":
        port = asked_port(args.prefect_port)  # a bad value: one line (cli.main), before anything starts
        if _configured_beside(port):
            print(f"PREFECT_API_URL is set ({_masked(configured_api_url())}): vhd commands use that server; the "
                  "local one is not started")
            return 0
        ensure_server(port=port)
    lines, ok = status_lines()
    print("\n".join(lines))
    return 0 if ok else 1
