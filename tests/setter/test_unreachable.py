"""An LLM endpoint that nothing listens on fails fast in one line naming it (issue 31, item 12): one try, not
retries for minutes, and the calls that follow within UNREACHABLE_HOLD_S fail at once without a connection. A real
litellm call to a closed port of the loopback; a real transient error (a 503 from a real server) is still retried."""

from __future__ import annotations

import http.server
import json
import threading
import time

import pytest

from platformkit.processes import free_port
from setter import llm_client
from setter.llm_client import LlmCallFailed, complete

SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("VHD_LLM_CACHE", str(tmp_path / "llm-cache"))
    monkeypatch.setenv("VHD_LLM_RETRY_WAIT", "0.01")
    monkeypatch.setattr(llm_client, "_unreachable", {})
    yield


def test_a_refused_connection_is_one_try_and_one_line_naming_the_endpoint(monkeypatch):
    base = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    monkeypatch.setenv("VHD_LLM_OPTIONS", json.dumps({"api_base": base, "api_key": "k"}))
    with pytest.raises(LlmCallFailed) as failed:
        complete(["openai/x"], MESSAGES, SCHEMA, "key-1", 0)
    assert str(failed.value) == (f"openai/x: cannot reach {base} (model openai/x) (connection refused: nothing "
                                 "listens there): start the model server or fix api_base in $VHD_LLM_OPTIONS")
    assert len(failed.value.calls) == 1  # no retry
    started = time.monotonic()
    with pytest.raises(LlmCallFailed, match=f"cannot reach {base}") as again:
        complete(["openai/x"], MESSAGES, SCHEMA, "key-2", 0)
    assert again.value.calls == []  # not called again while it is known unreachable
    assert time.monotonic() - started < 5


class _Busy(http.server.BaseHTTPRequestHandler):
    hits = 0

    def do_POST(self):  # noqa: N802 - the handler's name
        type(self).hits += 1
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(503)
        self.send_header("Content-Type", "application/json")
        body = b'{"error": {"message": "busy", "type": "server_error"}}'
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_5xx_is_still_retried(monkeypatch):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Busy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/v1"
        monkeypatch.setenv("VHD_LLM_OPTIONS", json.dumps({"api_base": base, "api_key": "k"}))
        monkeypatch.setenv("VHD_LLM_RETRIES", "2")
        with pytest.raises(LlmCallFailed) as failed:
            complete(["openai/x"], MESSAGES, SCHEMA, "key-3", 0)
        assert len(failed.value.calls) == 3 and _Busy.hits == 3  # the first try and 2 retries, one request each
        assert "cannot reach" not in str(failed.value)
    finally:
        server.shutdown()
