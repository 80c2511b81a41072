"""The whole factory against the real local model: `vhd generate --setter litellm` through the Prefect server
and litellm to gemma-3-270m behind llama.cpp's server on 127.0.0.1 (no mock anywhere)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

VHD = str(Path(sys.executable).parent / "vhd")
# A rendering takes the 270M model 60-90 s on two cores since the tasks gained bulk operations (more tools to name):
# six environments, and the module's fixture gets the time it needs
COUNT = 6
pytestmark = pytest.mark.timeout(1500)


@pytest.fixture(scope="module")
def generated(local_llm, prefect_server, tmp_path_factory):
    model, api_base = local_llm
    root = tmp_path_factory.mktemp("local-generation")
    env = {**os.environ, "VHD_LLM_OPTIONS": json.dumps({"api_base": api_base, "api_key": "local"}),
           "VHD_LLM_RESPONSE_FORMAT": "json_object", "VHD_LLM_DRAFT": "compact",
           "VHD_LLM_PRICES": json.dumps({model: [0.2, 0.8]}), "VHD_LLM_CACHE": str(root / "cache")}
    warehouse = str(root / "wh")
    result = subprocess.run([VHD, "generate", "--setter", "litellm", "--model", model, "--count", str(COUNT),
                             "--families", "tardiness,routing", "--date", "2026-07-01", "--workers", "1",
                             "--warehouse", warehouse, "--no-progress"],
                            capture_output=True, text=True, timeout=3000, env=env)
    return warehouse, result, env


def query(warehouse, sql):
    out = subprocess.run([VHD, "query", sql, "--format", "json", "--warehouse", warehouse], capture_output=True,
                         text=True, timeout=120, check=True)
    return json.loads(out.stdout)


def test_environments_are_generated_through_the_local_model(generated):
    warehouse, result, _ = generated
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "ERROR" not in result.stderr
    envs = query(warehouse, "SELECT count(*) AS n, min(setter) AS setter, min(model) AS model, "
                            "count(*) FILTER (WHERE llm_cost_usd > 0) AS costed FROM environments")[0]
    assert envs == {"n": COUNT, "setter": "litellm", "model": "openai/gemma-3-270m", "costed": COUNT}


def test_llm_calls_hold_real_token_counts_and_every_attempt_is_recorded(generated):
    warehouse, _, _ = generated
    calls = query(warehouse, "SELECT instance_key, attempt, prompt_tokens, completion_tokens, cost_usd, cost_source, "
                             "cache_hit, error FROM llm_calls")
    assert len(calls) >= COUNT
    answered = [c for c in calls if c["error"] is None]
    assert answered and all(c["prompt_tokens"] > 200 and c["completion_tokens"] > 50 for c in answered)
    assert len({c["completion_tokens"] for c in answered}) > 1  # real generations differ in length
    assert all(c["cost_source"] == "custom" and not c["cache_hit"] for c in answered)
    for c in answered:
        assert c["cost_usd"] == pytest.approx((c["prompt_tokens"] * 0.2 + c["completion_tokens"] * 0.8) / 1e6)
    attempts = query(warehouse, "SELECT instance_key, attempt, admitted, reason FROM attempts")
    assert {(c["instance_key"], c["attempt"]) for c in calls} == {(a["instance_key"], a["attempt"]) for a in attempts}
    assert sum(a["admitted"] for a in attempts) == COUNT
    assert all(a["reason"] for a in attempts if not a["admitted"])


def test_a_rerun_of_the_night_answers_from_the_cache(generated, tmp_path):
    warehouse, _, env = generated
    fresh = str(tmp_path / "wh2")
    result = subprocess.run([VHD, "generate", "--setter", "litellm", "--model", "openai/gemma-3-270m", "--count",
                             str(COUNT), "--families", "tardiness,routing", "--date", "2026-07-01", "--workers", "1",
                             "--warehouse", fresh, "--no-progress"], capture_output=True, text=True, timeout=3000,
                            env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    calls = query(fresh, "SELECT count(*) AS n, count(*) FILTER (WHERE cache_hit) AS cached, sum(cost_usd) AS usd "
                         "FROM llm_calls")[0]
    assert calls["n"] == calls["cached"] > 0 and calls["usd"] == 0
    assert query(fresh, "SELECT count(*) AS n FROM environments")[0]["n"] == COUNT


def _llm_usd(warehouse, family_sql: str = "split_part(shard_key, '-', 1)") -> dict:
    """Each family's LLM USD from its calls: unknown when one call's cost is unknown (never counted as 0)."""
    rows = query(warehouse, f"SELECT {family_sql} AS family, count(*) FILTER (WHERE cost_usd IS NULL) AS unknown, "
                            "sum(cost_usd) AS usd FROM llm_calls GROUP BY 1")
    return {r["family"]: "unknown" if r["unknown"] else r["usd"] for r in rows}


def test_the_run_table_artifact_shows_each_family_llm_usd_from_its_calls(generated):
    from tasks.commit import RUN_TABLE_KEY
    from tests.flows.prefect_api import run_artifacts

    warehouse, _, _ = generated
    (run,) = query(warehouse, "SELECT flow_run_id FROM runs")
    (artifact,) = run_artifacts(run["flow_run_id"], RUN_TABLE_KEY)
    *families, total = json.loads(artifact.data)
    usd = _llm_usd(warehouse)
    assert set(usd) == {"routing", "tardiness"}
    assert {f["family"]: f["llm_usd"] for f in families} == pytest.approx(usd, abs=1e-8)  # USD to 8 decimals
    assert sum(f["admitted"] for f in families) == total["admitted"] == COUNT


def test_an_unknown_llm_cost_shows_as_unknown_in_the_run_table(generated, local_llm, tmp_path):
    from tasks.commit import RUN_TABLE_KEY
    from tests.flows.prefect_api import run_artifacts

    _, _, env = generated
    env = {k: v for k, v in env.items() if k != "VHD_LLM_PRICES"} | {"VHD_LLM_CACHE": str(tmp_path / "cache")}
    warehouse = str(tmp_path / "wh")
    result = subprocess.run([VHD, "generate", "--setter", "litellm", "--model", local_llm[0], "--count", "1",
                             "--families", "tardiness", "--date", "2026-07-02", "--workers", "1", "--warehouse",
                             warehouse, "--no-progress"], capture_output=True, text=True, timeout=3000, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "unknown" in {c["cost_source"] for c in query(warehouse, "SELECT cost_source FROM llm_calls")}
    (run,) = query(warehouse, "SELECT flow_run_id, llm_cost_usd FROM runs")
    assert run["llm_cost_usd"] is None
    (artifact,) = run_artifacts(run["flow_run_id"], RUN_TABLE_KEY)
    rows = json.loads(artifact.data)
    assert [(r["family"], r["admitted"], r["llm_usd"]) for r in rows] == [("tardiness", 1, "unknown"),
                                                                        ("total", 1, "unknown")]
    assert "LLM unknown" in artifact.description and _llm_usd(warehouse) == {"tardiness": "unknown"}
