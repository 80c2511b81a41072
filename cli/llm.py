"""`vhd llm serve`: the local model (gemma-3-270m behind llama-cpp-python's server) in the foreground."""

from __future__ import annotations

import json
import signal
import sys
import time

from schemas.errors import UserError


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def cmd_llm(args) -> int:
    from setter.local_server import DEFAULT_PORT, LocalModelError, LocalModelServer

    if args.action != "serve":  # argparse allows only serve; kept for future actions
        raise UserError(f"unknown llm action {args.action!r}")
    port = DEFAULT_PORT if args.port is None else args.port
    if not 1 <= port <= 65535:
        raise UserError(f"--port must be between 1 and 65535, got {port}")
    server = LocalModelServer(port=port, n_ctx=args.n_ctx, log_path=args.log)
    # Ctrl-C, `kill -INT` (even of a background job, which starts with SIGINT ignored) and `kill` stop it cleanly
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    started = time.perf_counter()
    try:
        try:
            server.start()
        except LocalModelError as error:
            raise UserError(str(error)) from None
        options = json.dumps({"api_base": server.api_base, "api_key": "local"})
        print(f"local model {server.model} ready on {server.api_base} in {time.perf_counter() - started:.1f} s "
              f"(n_ctx {server.n_ctx}, {server.n_threads} threads; log {server.log_path})")
        print("use it with:")
        print(f"  --setter litellm --model {server.model}")
        print(f"  export VHD_LLM_OPTIONS='{options}'")
        print("  export VHD_LLM_RESPONSE_FORMAT=json_object   # the schema form this server enforces")
        print("  export VHD_LLM_DRAFT=compact                 # a 270M model names the tools; ~30 s per rendering")
        print("Ctrl-C stops it.", flush=True)
        code = server.wait()
        raise UserError(f"the local model server exited with code {code}: {server.log_tail()}")
    except KeyboardInterrupt:
        print("stopping the local model server", file=sys.stderr)
        server.stop()
        print("stopped", file=sys.stderr)
        return 0
    finally:
        server.stop()
