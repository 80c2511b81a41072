"""Tool calls per second: in process (`Environment.call`) and through `vhd serve-envs`' HTTP API on one core.

    .venv/bin/python benchmarks/runtime.py --warehouse /tmp/wh8 [--seconds 5] [--clients 4]

Both play the oracle's tool calls of every selected environment (hidden mode), episode after episode (a fresh
session per episode over HTTP). The HTTP server runs in a child process pinned to one core (os.sched_setaffinity);
the clients are threads with keep-alive connections, pinned to the other cores when there are any.
The mark (issue 8): at least 20,000 calls/s in process and 1,000 calls/s over HTTP.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import socket
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project's packages before benchmarks/setter.py

from envs.agents import oracle  # noqa: E402 - after the path
from envs.catalog import select_specs  # noqa: E402
from envs.environment import Environment  # noqa: E402


def scripts(specs, mode: str = "hidden"):
    out = []
    for spec in specs:
        env = Environment(spec, mode)
        out.append((env, list(oracle(env))))
    return out


def in_process(specs, seconds: float) -> float:
    episodes = scripts(specs)
    calls, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        for env, script in episodes:
            env.reset()
            for name, args in script:
                env.call(name, args)
            calls += len(script)
    return calls / (time.perf_counter() - started)


def _serve(warehouse: str, port: int, core: int) -> None:
    os.sched_setaffinity(0, {core})
    import uvicorn

    from serving.http import catalog_loader, create_app
    from warehouse.location import resolve_warehouse

    uvicorn.run(create_app(catalog_loader(resolve_warehouse(warehouse))), host="127.0.0.1", port=port,
                log_level="warning", access_log=False)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _request(conn, method: str, path: str, body=None) -> dict:
    conn.request(method, path, body=None if body is None else json.dumps(body),
                 headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    if response.status >= 300:
        raise RuntimeError(f"{method} {path}: {response.status} {data[:200]!r}")
    return json.loads(data)


def over_http(warehouse: str, specs, seconds: float, clients: int) -> tuple[float, float]:
    port = _free_port()
    cores = sorted(os.sched_getaffinity(0))
    server = multiprocessing.get_context("spawn").Process(target=_serve, args=(warehouse, port, cores[0]),
                                                           daemon=True)
    server.start()
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not start in 60 s") from None
            time.sleep(0.2)
    if len(cores) > 1:
        os.sched_setaffinity(0, set(cores[1:]))
    episodes = [(env.spec.env_id, script) for env, script in scripts(specs)]
    warm = http.client.HTTPConnection("127.0.0.1", port)
    for env_id, _ in episodes:  # load every spec once: the measured loop is sessions and calls
        _request(warm, "POST", "/sessions", {"env_id": env_id, "mode": "hidden"})
    counts = [0] * clients
    stop = time.perf_counter() + seconds

    def client(index: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port)
        while time.perf_counter() < stop:
            for env_id, script in episodes:
                session = _request(conn, "POST", "/sessions", {"env_id": env_id, "mode": "hidden"})["session_id"]
                for name, args in script:
                    _request(conn, "POST", f"/sessions/{session}/call", {"name": name, "arguments": args})
                counts[index] += len(script)
                _request(conn, "DELETE", f"/sessions/{session}")

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    server.terminate()
    server.join(10)
    return sum(counts) / elapsed, len(episodes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", default=os.environ.get("VHD_WAREHOUSE", "vhd_warehouse"))
    parser.add_argument("--where", default="true")
    parser.add_argument("--limit", type=int, default=26)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    specs = select_specs(args.where, args.limit, args.warehouse)
    rate = in_process(specs, args.seconds)
    print(f"in process: {rate:,.0f} tool calls/s ({len(specs)} environments, oracle episodes, hidden mode)")
    http_rate, _ = over_http(args.warehouse, specs, args.seconds, args.clients)
    print(f"over HTTP (server on one core, {args.clients} keep-alive clients): {http_rate:,.0f} tool calls/s")


if __name__ == "__main__":
    main()
