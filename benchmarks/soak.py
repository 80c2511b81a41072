"""Soak: `vhd serve-envs` and `vhd serve-openenv` at once on 127.0.0.1, under valid and hostile clients for minutes.

    .venv/bin/python benchmarks/soak.py [--minutes 30] [--warehouse DIR] [--sample-seconds 10]

Without --warehouse it generates a small one first (`vhd generate --count 13`, which uses the local Prefect server).
Both servers run as `vhd` subprocesses with small caps. Clients, each a thread, until the time is up:
- valid episodes: an oracle, default or random policy (envs.agents) played through each server's tools (HTTP
  sessions on serve-envs, WebSocket steps on serve-openenv); the server's final score must equal the score of the
  same tool calls replayed locally on the library's Environment (a mismatch is a "wrong score");
- hostile clients, one kind after another (bodies over 1 MiB, JSON nested 100,000 deep, 5,000-digit integers,
  binary WebSocket frames, stalled bodies, one client opening sessions until refused while another still gets one,
  abrupt disconnects); each answer is tallied by kind.
A sampler reads both servers' RSS (psutil) every --sample-seconds and whether they are alive. It prints episodes
played, wrong scores (must be 0), server crashes (0), the hostile requests by kind and answer, the servers' log lines
with a traceback or ERROR, and the RSS curve (minute -> MB per server) with its first, last and max.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from itertools import islice
from pathlib import Path

import httpx
import psutil
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project's packages before benchmarks/setter.py

from envs.agents import default, oracle, random_agent  # noqa: E402 - after the path
from envs.catalog import select_specs  # noqa: E402
from envs.environment import Environment  # noqa: E402
from schemas.envspec import MODES  # noqa: E402

VHD = str(Path(sys.executable).parent / "vhd")
POLICIES = {"oracle": oracle, "default": default, "random": random_agent}
ENVS_CAPS = ["--max-sessions", "200", "--sessions-per-client", "20", "--session-ttl", "60", "--body-timeout", "2"]
OPENENV_CAPS = ["--max-sessions", "64", "--sessions-per-client", "16"]
BIG = 2 * (1 << 20)  # a 2 MiB body: twice serve-envs' limit
DEEP = 100_000
DIGITS = "9" * 5000
STALL_WAIT_S = 10.0  # a stalled body still unanswered after this is "held"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    def __init__(self, name: str, argv: list[str], folder: Path):
        self.name, self.port, self.log = name, _free_port(), folder / f"{name}.log"
        self.url = f"http://127.0.0.1:{self.port}"
        with open(self.log, "w") as stderr:
            self.process = subprocess.Popen([VHD, name, *argv, "--port", str(self.port)], stdout=subprocess.DEVNULL,
                                            stderr=stderr)
        deadline = time.monotonic() + 120
        while True:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"vhd {name} did not start: {self.log.read_text()[-2000:]}")
            try:
                httpx.get(f"{self.url}/health", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.3)
        self.ps = psutil.Process(self.process.pid)

    def alive(self) -> bool:
        return self.process.poll() is None

    def rss_mb(self) -> float | None:
        try:
            return self.ps.memory_info().rss / 2**20
        except psutil.Error:
            return None

    def stop(self) -> None:
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()


class Tally:
    """Counts shared by the client threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.episodes: Counter[str] = Counter()
        self.wrong: list[str] = []
        self.hostile: Counter[tuple[str, str]] = Counter()
        self.client_errors: Counter[str] = Counter()

    def episode(self, server: str, ok: bool, what: str) -> None:
        with self.lock:
            self.episodes[server] += 1
            if not ok:
                self.wrong.append(what)

    def answer(self, kind: str, answer: str) -> None:
        with self.lock:
            self.hostile[(kind, answer)] += 1

    def error(self, where: str, error: BaseException) -> None:
        with self.lock:
            self.client_errors[f"{where}: {type(error).__name__}"] += 1


# --- valid episodes -----------------------------------------------------------------------------------------------

def _plan(spec, rng: random.Random) -> tuple[str, str, list]:
    mode, policy = rng.choice(MODES), rng.choice(list(POLICIES))
    env = Environment(spec, mode)
    calls = list(islice(POLICIES[policy](env, rng.randrange(1 << 30)), spec.turn_budget + 3))
    return mode, policy, calls


def _replayed(spec, mode: str, played: list) -> float:
    """The score of the same tool calls played on the library's Environment, in process."""
    env = Environment(spec, mode)
    for name, arguments in played:
        if env.done:
            break
        env.call(name, arguments)
    return env.score()


def _same(server_score, local: float) -> bool:
    if server_score is None:
        return math.isnan(local)
    return math.isclose(server_score, local, rel_tol=1e-12, abs_tol=1e-12)


def envs_episode(url: str, spec, rng: random.Random, tally: Tally) -> None:
    mode, policy, calls = _plan(spec, rng)
    with httpx.Client(base_url=url, timeout=30) as client:
        created = client.post("/sessions", json={"env_id": spec.env_id, "mode": mode})
        created.raise_for_status()
        sid, played = created.json()["session_id"], []
        for name, arguments in calls:
            answer = client.post(f"/sessions/{sid}/call", json={"name": name, "arguments": arguments})
            answer.raise_for_status()
            played.append((name, arguments))
            if answer.json()["done"]:
                break
        final = client.delete(f"/sessions/{sid}").json()["score"]
    local = _replayed(spec, mode, played)
    tally.episode("serve-envs", _same(final, local), f"serve-envs {spec.env_id} {mode} {policy}: {final} != {local}")


def openenv_episode(url: str, spec, rng: random.Random, tally: Tally) -> None:
    mode, policy, calls = _plan(spec, rng)
    with connect(url.replace("http://", "ws://") + "/ws", open_timeout=30, max_size=None) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"env_id": spec.env_id, "mode": mode}}))
        reply = json.loads(ws.recv(timeout=30))
        if reply["type"] != "observation":
            raise RuntimeError(f"reset refused: {reply}")
        played, reward = [], None
        for name, arguments in calls:
            ws.send(json.dumps({"type": "step", "data": {"type": "call_tool", "tool_name": name,
                                                         "arguments": arguments}}))
            reply = json.loads(ws.recv(timeout=30))
            if reply["type"] != "observation":
                raise RuntimeError(f"step refused: {reply}")
            played.append((name, arguments))
            if reply["data"]["done"]:
                reward = reply["data"]["reward"]
                break
        ws.send(json.dumps({"type": "state"}))
        final = json.loads(ws.recv(timeout=30))["data"]["score"]
        ws.send(json.dumps({"type": "close"}))
    local = _replayed(spec, mode, played)
    ok = _same(final, local) and (reward is None or _same(reward, local))
    tally.episode("serve-openenv", ok, f"serve-openenv {spec.env_id} {mode} {policy}: {final}/{reward} != {local}")


# --- hostile clients ----------------------------------------------------------------------------------------------

def _raw(port: int, request: bytes, close_after: float | None = None, wait: float = 30.0,
         source: str = "127.0.0.1") -> tuple[str, float]:
    """Send bytes, then read the status line: its code, "closed" (no answer) or "held" (none within `wait`)."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=wait, source_address=(source, 0)) as sock:
        try:
            sock.sendall(request)
        except OSError:
            return "closed while sending", time.monotonic() - started
        if close_after is not None:
            time.sleep(close_after)
            return "dropped by the client", time.monotonic() - started
        try:
            head = sock.recv(4096)
        except TimeoutError:
            return "held", time.monotonic() - started
        except OSError:
            return "closed", time.monotonic() - started
    code = head.split(b" ", 2)[1].decode() if head.startswith(b"HTTP/") else "closed"
    return code, time.monotonic() - started


def _post(path: str, body: bytes) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "\r\n").encode() + body


def _status(response: httpx.Response) -> str:
    detail = ""
    try:
        data = response.json()
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            detail = f" rpc {data['error'].get('code')}"
        elif isinstance(data, dict) and isinstance(data.get("observation"), dict) and "error" in data["observation"]:
            detail = " observation error"
    except ValueError:
        pass
    return f"{response.status_code}{detail}"


def _ws_answer(ws, message) -> str:
    try:
        ws.send(message)
        reply = json.loads(ws.recv(timeout=30))
    except ConnectionClosed as closed:
        return f"connection closed (code {closed.rcvd.code if closed.rcvd else None})"
    except TimeoutError:
        return "no answer in 30 s"
    if reply.get("type") == "error":
        return f"error {reply['data'].get('code')}"
    if reply.get("type") == "observation":
        data = reply["data"]["observation"]
        result = data.get("result") or {}
        return "observation (environment error)" if result.get("is_error") else "observation"
    return str(reply.get("type"))


def _deep_args() -> str:
    return "[" * DEEP + "]" * DEEP


def hostile_envs(server: Server, spec, kind: str, tally: Tally) -> None:
    url, port = server.url, server.port
    tool = spec.rendering.tools[0].name
    with httpx.Client(base_url=url, timeout=30) as client:
        if kind == "many sessions from one client":
            greedy = httpx.Client(base_url=url, transport=httpx.HTTPTransport(local_address="127.0.0.50"))
            made, answer = [], ""
            for _ in range(100):
                response = greedy.post("/sessions", json={"env_id": spec.env_id})
                if response.status_code != 201:
                    answer = f"{len(made)} x 201 then {response.status_code}"
                    break
                made.append(response.json()["session_id"])
            other = client.post("/sessions", json={"env_id": spec.env_id})
            answer += f"; another client {other.status_code}"
            for sid in made + ([other.json()["session_id"]] if other.status_code == 201 else []):
                (greedy if sid in made else client).delete(f"/sessions/{sid}")
            greedy.close()
            return tally.answer(f"serve-envs {kind}", answer)
        sid = client.post("/sessions", json={"env_id": spec.env_id}).json()["session_id"]
        try:
            call = f"/sessions/{sid}/call"
            json_type = {"content-type": "application/json"}
            if kind == "huge body":
                body = b'{"name": "x", "arguments": {"pad": "' + b"x" * BIG + b'"}}'
                answer = _status(client.post(call, content=body, headers=json_type))
            elif kind == "deep nesting":
                body = f'{{"name": "{tool}", "arguments": {{"a": {_deep_args()}}}}}'
                answer = _status(client.post(call, content=body, headers=json_type))
            elif kind == "5,000-digit integer":
                body = f'{{"name": "{tool}", "arguments": {{"a": {DIGITS}}}}}'
                answer = _status(client.post(call, content=body, headers=json_type))
            elif kind == "stalled body":
                code, took = _raw(port, _post(call, b'{"name": "' + b"x" * 100)[:-60], wait=STALL_WAIT_S)
                answer = f"{code} after {math.ceil(took)} s" if code != "held" else f"held > {STALL_WAIT_S:g} s"
            elif kind == "abrupt disconnect":
                answer, _ = _raw(port, _post(call, b'{"name": "' + b"x" * 100)[:-60], close_after=0.2)
            else:
                raise ValueError(kind)
        finally:
            client.delete(f"/sessions/{sid}")
    tally.answer(f"serve-envs {kind}", answer)


def hostile_openenv(server: Server, spec, kind: str, tally: Tally) -> None:
    url, port = server.url, server.port
    ws_url = url.replace("http://", "ws://") + "/ws"
    tool = spec.rendering.tools[0].name
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    if kind == "many sessions from one client":
        greedy = httpx.Client(base_url=url, transport=httpx.HTTPTransport(local_address="127.0.0.51"), timeout=30)
        made, answer = [], ""
        for _ in range(100):
            reply = greedy.post("/mcp", json={**rpc, "method": "openenv/session/create", "params": {}}).json()
            if "result" not in reply:
                answer = f"{len(made)} x created over /mcp then rpc {reply['error']['code']}"
                break
            made.append(reply["result"]["session_id"])
        with connect(ws_url, open_timeout=30) as ws:
            reset = _ws_answer(ws, json.dumps({"type": "reset", "data": {"env_id": spec.env_id}}))
            answer += f"; another client's WebSocket reset: {reset}"
        for sid in made:
            greedy.post("/mcp", json={**rpc, "method": "openenv/session/close", "params": {"session_id": sid}})
        greedy.close()
        return tally.answer(f"serve-openenv {kind}", answer)
    if kind.startswith("/mcp "):
        with httpx.Client(base_url=url, timeout=30) as client:
            if kind == "/mcp huge body":
                body = b'{"jsonrpc": "2.0", "id": 1, "method": "' + b"x" * BIG + b'"}'
                answer = _status(client.post("/mcp", content=body, headers={"content-type": "application/json"}))
            elif kind == "/mcp deep nesting":
                answer = _status(client.post("/mcp", content=f'{{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
                                             f'"params": {{"a": {_deep_args()}}}}}'.encode()))
            elif kind == "/mcp 5,000-digit integer":
                answer = _status(client.post("/mcp", content=f'{{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
                                             f'"params": {{"a": {DIGITS}}}}}'.encode()))
            elif kind == "/mcp stalled body":
                code, took = _raw(port, _post("/mcp", b'{"jsonrpc": "2.0", "id": 1, "method": "' + b"x" * 100)[:-60],
                                  wait=STALL_WAIT_S)
                answer = f"{code} after {math.ceil(took)} s" if code != "held" else f"held > {STALL_WAIT_S:g} s"
            else:
                raise ValueError(kind)
        return tally.answer(f"serve-openenv {kind}", answer)
    with connect(ws_url, open_timeout=30, max_size=None) as ws:
        reset = _ws_answer(ws, json.dumps({"type": "reset", "data": {"env_id": spec.env_id}}))
        if reset != "observation":
            return tally.answer(f"serve-openenv {kind}", f"reset refused: {reset}")
        if kind == "ws binary frame":
            answer = _ws_answer(ws, b"\x00\x01binary")
        elif kind == "ws deep nesting":
            answer = _ws_answer(ws, '{"type": "step", "data": ' + _deep_args() + "}")
        elif kind == "ws 5,000-digit integer":
            answer = _ws_answer(ws, f'{{"type": "step", "data": {{"type": "call_tool", "tool_name": "{tool}", '
                                    f'"arguments": {{"a": {DIGITS}}}}}}}')
        elif kind == "ws abrupt disconnect":
            ws.socket.shutdown(socket.SHUT_RDWR)  # no close frame
            answer = "dropped by the client"
        else:
            raise ValueError(kind)
        if kind != "ws abrupt disconnect":
            after = _ws_answer(ws, json.dumps({"type": "state"}))
            answer += f"; session then {'alive' if after == 'state' else after}"
    tally.answer(f"serve-openenv {kind}", answer)


ENVS_KINDS = ["huge body", "deep nesting", "5,000-digit integer", "stalled body", "many sessions from one client",
              "abrupt disconnect"]
OPENENV_KINDS = ["ws binary frame", "ws deep nesting", "ws 5,000-digit integer", "ws abrupt disconnect",
                 "/mcp huge body", "/mcp deep nesting", "/mcp 5,000-digit integer", "/mcp stalled body",
                 "many sessions from one client"]


# --- the run ------------------------------------------------------------------------------------------------------

def _loop(stop: threading.Event, name: str, body, tally: Tally, pause: float) -> None:
    while not stop.is_set():
        try:
            body()
        except Exception as error:  # noqa: BLE001 - a client's failure is tallied, the soak goes on
            tally.error(name, error)
            time.sleep(1)
        stop.wait(pause)


def _warehouse(given: str | None, folder: Path) -> str:
    if given:
        return given
    path = folder / "wh"
    print(f"generating 13 environments into {path} (vhd generate) ...", file=sys.stderr)
    subprocess.run([VHD, "generate", "--count", "13", "--warehouse", str(path), "--no-progress"], check=True,
                   stdout=subprocess.DEVNULL)
    return str(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--warehouse", help="a warehouse to serve (default: generate 13 environments first)")
    parser.add_argument("--sample-seconds", type=float, default=10.0, help="RSS sampling period (default 10)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="vhd-soak-"))
    warehouse = _warehouse(args.warehouse, folder)
    specs = select_specs("true", None, warehouse)
    envs_server = Server("serve-envs", ["--warehouse", warehouse, *ENVS_CAPS], folder)
    try:
        openenv_server = Server("serve-openenv", ["--warehouse", warehouse, *OPENENV_CAPS], folder)
    except BaseException:
        envs_server.stop()  # never leave the first server behind
        raise
    servers = [envs_server, openenv_server]
    print(f"soak: {len(specs)} environments, {args.minutes:g} min; serve-envs {envs_server.url} "
          f"({' '.join(ENVS_CAPS)}), serve-openenv {openenv_server.url} ({' '.join(OPENENV_CAPS)}); logs in {folder}",
          file=sys.stderr)
    tally, stop, samples, crashes = Tally(), threading.Event(), [], Counter()
    rng = random.Random(args.seed)

    def valid(run, url, seed):
        local = random.Random(seed)
        return lambda: run(url, local.choice(specs), local, tally)

    def hostile(run, server, kinds, seed):
        local, turn = random.Random(seed), iter(range(1 << 62))
        return lambda: run(server, local.choice(specs), kinds[next(turn) % len(kinds)], tally)

    loops = [("valid serve-envs", valid(envs_episode, envs_server.url, rng.random()), 0.05),
             ("valid serve-envs", valid(envs_episode, envs_server.url, rng.random()), 0.05),
             ("valid serve-openenv", valid(openenv_episode, openenv_server.url, rng.random()), 0.05),
             ("valid serve-openenv", valid(openenv_episode, openenv_server.url, rng.random()), 0.05),
             ("hostile serve-envs", hostile(hostile_envs, envs_server, ENVS_KINDS, rng.random()), 0.5),
             ("hostile serve-openenv", hostile(hostile_openenv, openenv_server, OPENENV_KINDS, rng.random()), 0.5)]
    threads = [threading.Thread(target=_loop, args=(stop, name, body, tally, pause), daemon=True)
               for name, body, pause in loops]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    try:
        while (elapsed := time.monotonic() - started) < args.minutes * 60:
            samples.append((elapsed, *(server.rss_mb() for server in servers)))
            for server in servers:
                if not server.alive():
                    crashes[server.name] += 1
            if crashes:
                break
            time.sleep(min(args.sample_seconds, max(0.0, args.minutes * 60 - elapsed)))
        samples.append((time.monotonic() - started, *(server.rss_mb() for server in servers)))
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
        for server in servers:
            if not server.alive():
                crashes[server.name] += 1
            server.stop()
    _report(args, tally, crashes, samples, servers)
    return 0 if not tally.wrong and not crashes else 1


def _report(args, tally: Tally, crashes: Counter, samples: list, servers: list[Server]) -> None:
    print(f"\nsoak of {args.minutes:g} min on 127.0.0.1 (serve-envs and serve-openenv at once)")
    per_server = ", ".join(f"{name} {count}" for name, count in sorted(tally.episodes.items()))
    print(f"episodes played: {sum(tally.episodes.values())} ({per_server})")
    print(f"wrong scores: {len(tally.wrong)}")
    for line in tally.wrong[:10]:
        print(f"  {line}")
    print(f"server crashes: {sum(crashes.values())}")
    print(f"valid-client failures (not wrong scores): {sum(tally.client_errors.values())}")
    for where, count in sorted(tally.client_errors.items()):
        print(f"  {count:5d}  {where}")
    print("hostile requests by kind -> answer:")
    for (kind, answer), count in sorted(tally.hostile.items()):
        print(f"  {count:5d}  {kind} -> {answer}")
    for server in servers:
        text = server.log.read_text(errors="replace")
        print(f"{server.name} log: {text.count('Traceback')} tracebacks, "
              f"{sum('ERROR' in line for line in text.splitlines())} ERROR lines, "
              f"{sum('WARNING' in line for line in text.splitlines())} WARNING lines")
    print("RSS (MB), last sample of each minute:")
    print(f"  {'minute':>6} {'serve-envs':>11} {'serve-openenv':>14}")
    by_minute = {}
    for elapsed, envs_mb, openenv_mb in samples:
        by_minute[int(elapsed // 60)] = (envs_mb, openenv_mb)
    for minute, (envs_mb, openenv_mb) in sorted(by_minute.items()):
        print(f"  {minute:>6} {_mb(envs_mb):>11} {_mb(openenv_mb):>14}")
    for index, server in enumerate(servers, start=1):
        values = [sample[index] for sample in samples if sample[index] is not None]
        if values:
            print(f"{server.name} RSS: first {values[0]:.1f} MB, last {values[-1]:.1f} MB, max {max(values):.1f} MB "
                  f"({len(values)} samples every {args.sample_seconds:g} s)")


def _mb(value: float | None) -> str:
    return "gone" if value is None else f"{value:.1f}"


if __name__ == "__main__":
    raise SystemExit(main())
