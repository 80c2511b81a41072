"""`vhd doctor` against real services: what it reports, its exit code, and that it never prints a secret."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
VHD = str(Path(sys.executable).parent / "vhd")
SECRET = "sk-do-not-print-7f3a9c"


def _closed_port() -> int:
    with socket.socket() as sock:  # bound then released: nothing listens there
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _doctor(*args, env: dict | None = None, drop: tuple[str, ...] = ()) -> tuple[int, dict, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("VHD_", "AWS_")) and k not in drop}
    result = subprocess.run([VHD, "doctor", "--format", "json", *args], env={**base, **(env or {})},
                            capture_output=True, text=True, timeout=180)
    report = json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}
    return result.returncode, report, result.stdout + result.stderr


def _checks(report: dict) -> dict[str, dict]:
    return {c["service"]: c for c in report["checks"]}


def test_a_healthy_setup_reports_its_configuration_and_exits_zero(prefect_server, tmp_path):
    code, report, output = _doctor("--warehouse", str(tmp_path / "wh"),
                                   env={"PREFECT_API_URL": prefect_server, "VHD_CPU_HOUR_USD": "0.12"})
    assert code == 0, output
    checks = _checks(report)
    assert checks["warehouse readable"]["status"] == "ok" and checks["warehouse writable"]["status"] == "ok"
    assert checks["prefect api"]["status"] == "ok" and prefect_server in checks["prefect api"]["detail"]
    settings = {r["setting"]: r["value"] for r in report["configuration"]}
    assert settings["warehouse"] == str(tmp_path / "wh") and settings["prefect api"] == prefect_server
    assert settings["compute price"] == "$0.12 per CPU-hour" and settings["setter"] == "template"
    assert settings["runner"] == "threads"
    assert report["ok"] is True
    assert not list((tmp_path / "wh").rglob("*probe*"))  # the write probe is cleaned up


def test_an_unreachable_prefect_api_fails_with_what_to_do(tmp_path):
    api = f"http://127.0.0.1:{_closed_port()}/api"
    code, report, output = _doctor("--warehouse", str(tmp_path / "wh"), env={"PREFECT_API_URL": api})
    assert code == 1, output
    check = _checks(report)["prefect api"]
    assert check["status"] == "FAIL" and "not reachable" in check["detail"] and "prefect server start" in check["fix"]
    assert _checks(report)["warehouse writable"]["status"] == "ok"  # the other checks still ran
    table = subprocess.run([VHD, "doctor", "--warehouse", str(tmp_path / "wh")], capture_output=True, text=True,
                           timeout=180, env={**os.environ, "PREFECT_API_URL": api})
    assert table.returncode == 1 and "1 service(s) unreachable: prefect api" in table.stdout
    assert "Traceback" not in table.stdout + table.stderr


def test_secrets_show_as_set_and_unreachable_llm_s3_and_dask_fail(tmp_path):
    port = _closed_port()
    env = {"VHD_LLM_OPTIONS": json.dumps({"api_base": f"http://127.0.0.1:{port}/v1", "api_key": SECRET}),
           "AWS_ACCESS_KEY_ID": "AKIAEXAMPLEKEY", "AWS_SECRET_ACCESS_KEY": SECRET,
           "VHD_S3_ENDPOINT_URL": f"http://user:{SECRET}@127.0.0.1:{port}", "AWS_MAX_ATTEMPTS": "1",
           "VHD_LLM_PRICES": json.dumps({"openai/local": [0.2, 0.8]})}
    code, report, output = _doctor("--warehouse", "s3://vhd-doctor/wh", "--setter", "litellm", "--model",
                                   "openai/local", "--runner", "dask", "--dask-address", f"tcp://127.0.0.1:{port}",
                                   env=env)
    assert code == 1
    assert SECRET not in output and "AKIAEXAMPLEKEY" not in output
    settings = {r["setting"]: r["value"] for r in report["configuration"]}
    assert settings["llm option api_key"] == "set" and settings["AWS_SECRET_ACCESS_KEY"] == "set"
    assert settings["s3 endpoint"] == f"http://***@127.0.0.1:{port}"
    assert settings["price of openai/local"].startswith("0.2 prompt / 0.8 completion")
    checks = _checks(report)
    for service in ("warehouse readable", "warehouse writable", "llm endpoint", "dask scheduler"):
        assert checks[service]["status"] == "FAIL" and checks[service]["fix"], (service, checks[service])
    assert "vhd llm serve" in checks["llm endpoint"]["fix"]


def test_a_hosted_model_without_its_key_is_named_not_printed(tmp_path):
    code, report, output = _doctor("--warehouse", str(tmp_path / "wh"), "--setter", "litellm", "--model",
                                   "openai/gpt-4o-mini", drop=("OPENAI_API_KEY",))
    assert code == 1, output
    check = _checks(report)["llm provider keys"]
    assert check["status"] == "FAIL" and "OPENAI_API_KEY" in check["detail"]
    prices = {r["setting"]: r["value"] for r in report["configuration"]}["price of openai/gpt-4o-mini"]
    assert "litellm's price map" in prices


def test_the_local_model_endpoint_is_reachable(local_llm, tmp_path):
    model, api_base = local_llm
    code, report, output = _doctor("--warehouse", str(tmp_path / "wh"), "--setter", "litellm", "--model", model,
                                   env={"VHD_LLM_OPTIONS": json.dumps({"api_base": api_base, "api_key": "local"})})
    assert code == 0, output
    check = _checks(report)["llm endpoint"]
    assert check["status"] == "ok" and model.split("/", 1)[1] in check["detail"]
