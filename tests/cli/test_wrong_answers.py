"""No wrong answer exits 0 (issue 14): unknown LLM cost lands as null, a run that admitted nothing fails, --model
with the template setter is refused. Every case runs the real `vhd` command against the test Prefect server."""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

VHD = str(Path(sys.executable).parent / "vhd")


def vhd(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([VHD, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def one_error_line(result: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize("command", [
    ["generate", "--count", "1", "--families", "knapsack", "--model", "openai/gpt-4o-mini"],
    ["serve", "--count", "1", "--model", "openai/gpt-4o-mini"],
])
def test_model_with_the_template_setter_is_refused(command, tmp_path):
    result = vhd(*command, "--warehouse", str(tmp_path / "wh"), env={"PREFECT_API_URL": "http://127.0.0.1:9/api"})
    assert result.returncode == 2
    assert one_error_line(result) == "error: --model needs --setter litellm"
    assert not (tmp_path / "wh").exists()


def test_the_flow_entry_refuses_model_with_the_template_setter(tmp_path):
    from flows.generate import run_generate_state

    with pytest.raises(ValueError, match="--model needs --setter litellm"):
        run_generate_state(count=1, families="knapsack", setter="template", model="openai/gpt-4o-mini",
                           warehouse=str(tmp_path / "wh"))


def test_failed_llm_calls_cost_null_and_a_run_that_admitted_nothing_exits_1(prefect_server, tmp_path):
    warehouse = str(tmp_path / "wh")
    options = json.dumps({"api_base": f"http://127.0.0.1:{closed_port()}/v1", "api_key": "unused", "timeout": 5})
    result = vhd("generate", "--count", "1", "--families", "knapsack", "--date", "2026-06-01", "--setter", "litellm",
                 "--model", "openai/nothing-listening", "--warehouse", warehouse, "--no-progress",
                 env={"VHD_LLM_OPTIONS": options, "VHD_LLM_RETRIES": "0", "VHD_LLM_RETRY_WAIT": "0",
                      "VHD_LLM_CACHE": "off"})
    assert result.returncode == 1, result.stdout + result.stderr
    assert "0 admitted" in result.stdout  # the summary line is still printed
    assert "Traceback" not in result.stderr
    with duckdb.connect() as con:  # its own connection: the module's default one may hold another test's result
        calls = con.sql(f"SELECT cost_usd, cost_source, error FROM read_parquet('{warehouse}/llm_calls/**/*.parquet', "
                        "hive_partitioning = true)").fetchall()
    assert calls, "the failed calls are recorded"
    for cost, source, error in calls:
        assert cost is None and source == "unknown", (cost, source, error)
        assert "Connection error" in error


def test_a_refusal_with_a_4xx_status_is_known_to_cost_nothing():
    import litellm

    from setter.llm_client import failed_call_cost

    refused = litellm.BadRequestError("bad request", model="openai/x", llm_provider="openai")
    unreachable = litellm.InternalServerError("Connection error.", model="openai/x", llm_provider="openai")
    assert failed_call_cost(refused) == (0.0, "provider")
    assert failed_call_cost(unreachable) == (None, "unknown")
    assert failed_call_cost(TimeoutError("slow")) == (None, "unknown")


def test_an_evaluation_whose_model_never_answered_lands_a_null_score_and_is_counted_as_failed(prefect_server, tmp_path):
    warehouse = str(tmp_path / "wh")
    generated = vhd("generate", "--count", "2", "--families", "knapsack", "--date", "2026-06-02", "--warehouse",
                    warehouse, "--no-progress")
    assert generated.returncode == 0, generated.stderr
    api_base = f"http://127.0.0.1:{closed_port()}/v1"
    result = vhd("eval", "--agent", "litellm", "--model", "openai/nothing-listening", "--api-base", api_base,
                 "--mode", "hidden", "--warehouse", warehouse, "--format", "json",
                 env={"VHD_LLM_RETRIES": "0", "VHD_LLM_RETRY_WAIT": "0"})
    assert "Traceback" not in result.stderr, result.stderr
    assert "2 failed (the model kept failing: score null" in result.stdout, result.stdout
    assert result.returncode == 1  # every episode failed: the evaluation measured nothing
    rows = json.loads(vhd("query", "SELECT score, u, error, cost_usd FROM evaluations", "--format", "json",
                          "--warehouse", warehouse).stdout)
    assert len(rows) == 2
    for row in rows:
        assert row["score"] is None and row["u"] is None and row["cost_usd"] is None, row
        assert "Connection error" in row["error"]
    report = vhd("report", "eval", "--format", "csv", "--warehouse", warehouse)
    assert report.returncode == 0, report.stderr
    tables, header = [], None
    for line in csv.reader(report.stdout.splitlines()):
        if "failed" in line:
            header = line
        elif header and line and "openai/nothing-listening" in line:
            tables.append(dict(zip(header, line, strict=True)))
    assert len(tables) == 2, report.stdout  # both report tables say how many failed and score none of them
    assert all(row["failed"] == "2" and row.get("mean_score", row.get("hidden")) == "" for row in tables), tables
