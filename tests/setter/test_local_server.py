"""The real local model: gemma-3-270m behind llama-cpp-python's server, reached through litellm (no mocks)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import jsonschema
import pytest

from setter.local_server import (
    HOST,
    LITELLM_MODEL,
    MAX_GRAMMAR_STRING_LENGTH,
    LocalModelError,
    LocalModelServer,
    free_port,
    grammar_safe,
    json_object_format,
)

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm is imported later: never fetch prices
pytestmark = pytest.mark.integration

ANSWER = {
    "type": "object",
    "additionalProperties": False,
    "required": ["city", "mood", "alone"],
    "properties": {
        "city": {"type": "string", "maxLength": 40},
        "mood": {"type": "string", "enum": ["quartz_heron", "velvet_anvil", "tidal_lantern"]},
        "alone": {"type": "boolean"},  # bounded: an integer's digits can run to max_tokens
    },
}
QUESTION = [{"role": "system", "content": "You answer with one JSON object."},
            {"role": "user", "content": "Which city did you visit last summer, how did it feel, and did you go "
                                        "alone?"}]


def _complete(api_base: str, response_format: dict, **kwargs):
    import litellm

    return litellm.completion(model=LITELLM_MODEL, api_base=api_base, api_key="local", messages=QUESTION,
                              response_format=response_format, num_retries=0, **{"max_tokens": 80, **kwargs})


def _models(api_base: str) -> list[str]:
    with urllib.request.urlopen(f"{api_base}/models", timeout=10) as response:
        return [model["id"] for model in json.load(response)["data"]]


def test_the_server_starts_on_loopback_and_lists_the_model(local_llm):
    model, api_base = local_llm
    assert model == "openai/gemma-3-270m"
    assert api_base.startswith(f"http://{HOST}:") and api_base.endswith("/v1")
    assert _models(api_base) == ["gemma-3-270m"]


def test_litellm_gets_json_that_validates_against_the_schema_with_real_token_usage(local_llm):
    _, api_base = local_llm
    response = _complete(api_base, json_object_format(ANSWER), max_tokens=120)
    answer = json.loads(response.choices[0].message.content)
    jsonschema.validate(answer, ANSWER)
    assert response.usage.prompt_tokens > 20  # the real prompt, chat template included
    assert response.usage.completion_tokens > 5


def test_an_enum_is_enforced_even_where_the_model_would_not_write_it(local_llm):
    _, api_base = local_llm
    for temperature in (0.0, 1.5):  # a hot sampler still cannot leave the grammar
        response = _complete(api_base, json_object_format(ANSWER), temperature=temperature, max_tokens=120)
        answer = json.loads(response.choices[0].message.content)
        assert answer["mood"] in ANSWER["properties"]["mood"]["enum"]
        assert set(answer) == {"city", "mood", "alone"}


def test_openai_json_schema_form_is_refused_by_this_server(local_llm):
    """The documented limitation: if a llama-cpp-python upgrade accepts it, this fails; update the module's notes."""
    import litellm

    _, api_base = local_llm
    with pytest.raises(litellm.exceptions.InternalServerError, match="json_object"):
        _complete(api_base, {"type": "json_schema", "json_schema": {"name": "x", "schema": ANSWER}})
    assert _models(api_base) == ["gemma-3-270m"]  # and the server is still up


def test_a_long_max_length_is_lowered_so_the_server_survives(local_llm):
    _, api_base = local_llm
    schema = {"type": "object", "additionalProperties": False, "required": ["story"],
              "properties": {"story": {"type": "string", "maxLength": 1500}}}
    response = _complete(api_base, json_object_format(schema), max_tokens=40)
    assert response.usage.completion_tokens > 0
    assert _models(api_base) == ["gemma-3-270m"]  # a maxLength of 1500 as such would have killed the server


def test_grammar_safe_lowers_only_string_lengths_above_the_limit():
    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 1500},
                                               "b": {"type": "string", "maxLength": 10},
                                               "c": {"type": "array", "maxItems": 5000,
                                                     "items": [{"maxLength": 4000}]}}}
    safe = grammar_safe(schema)
    assert safe["properties"]["a"]["maxLength"] == MAX_GRAMMAR_STRING_LENGTH
    assert safe["properties"]["b"]["maxLength"] == 10
    assert safe["properties"]["c"]["maxItems"] == 5000
    assert safe["properties"]["c"]["items"][0]["maxLength"] == MAX_GRAMMAR_STRING_LENGTH
    assert schema["properties"]["a"]["maxLength"] == 1500  # the caller's schema is untouched


def test_a_taken_port_is_a_clear_one_line_error():
    with socket.socket() as taken:
        taken.bind((HOST, 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(LocalModelError, match=f"port {port} on 127.0.0.1 is already in use"):
            LocalModelServer(port=port).start()
        result = subprocess.run([sys.executable, "-m", "cli.main", "llm", "serve", "--port", str(port)],
                                capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"error: port {port} on 127.0.0.1 is already in use; choose "
                                                  f"another with --port"]


def test_a_server_that_dies_at_start_is_reported_with_its_log(tmp_path):
    class Broken(LocalModelServer):  # the real start/wait/stop machinery around a process that exits at once
        def command(self, gguf, chat_config):
            return [sys.executable, "-c", "import sys; print('cannot load the model'); sys.exit(3)"]

    with pytest.raises(LocalModelError, match="exited with code 3: log .*cannot load the model"):
        Broken(log_path=tmp_path / "server.log").start()


def test_vhd_llm_serve_answers_then_stops_on_ctrl_c(tmp_path):
    port = free_port()
    log = tmp_path / "serve.log"
    process = subprocess.Popen([sys.executable, "-m", "cli.main", "llm", "serve", "--port", str(port), "--n-ctx",
                                "2048", "--log", str(log)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        lines = []
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("Ctrl-C stops it."):
                break
        printed = "".join(lines)
        assert "--model openai/gemma-3-270m" in printed, printed + process.stderr.read()
        assert f"""VHD_LLM_OPTIONS='{{"api_base": "http://127.0.0.1:{port}/v1", "api_key": "local"}}'""" in printed
        assert "VHD_LLM_RESPONSE_FORMAT=json_object" in printed and "VHD_LLM_DRAFT=compact" in printed
        assert _models(f"http://127.0.0.1:{port}/v1") == ["gemma-3-270m"]
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
        stderr = process.stderr.read()
        assert "Traceback" not in stderr and "stopped" in stderr
        with socket.socket() as sock:  # the server is gone with it
            assert sock.connect_ex((HOST, port)) != 0
        assert "Uvicorn running on http://127.0.0.1" in log.read_text()  # its output went to the log
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_concurrent_requests_queue_and_each_gets_valid_json(local_llm):
    from concurrent.futures import ThreadPoolExecutor

    _, api_base = local_llm
    with ThreadPoolExecutor(3) as pool:
        responses = list(pool.map(lambda _: _complete(api_base, json_object_format(ANSWER), max_tokens=120), range(3)))
    for response in responses:
        jsonschema.validate(json.loads(response.choices[0].message.content), ANSWER)
