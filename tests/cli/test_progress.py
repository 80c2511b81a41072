"""The progress bar's text: what a user watching a paid run sees, fed by the live counters."""

from __future__ import annotations

from cli.progress import describe
from schemas.shard import CallRecord
from tasks.progress import ProgressHub


def _call(**changes) -> CallRecord:
    fields = {"call_id": "c", "instance_key": "k", "attempt": 1, "stage": "render", "model": "m",
              "prompt_tokens": 700, "completion_tokens": 300, "cost_usd": 0.002, "cost_source": "custom",
              "latency_s": 1.0, "cache_hit": False, "error": None}
    return CallRecord(**{**fields, **changes})


def test_requests_cached_failed_tokens_cost_and_projection_are_shown():
    hub = ProgressHub()
    hub.reset(10)
    hub.record_call(_call(), shard="s")
    hub.record_call(_call(cache_hit=True, cost_usd=0.0, cost_source="cache"), shard="s")
    hub.record_call(_call(error="RateLimitError: slow down", prompt_tokens=None, completion_tokens=None,
                          cost_usd=0.0, cost_source="provider"), shard="s")
    hub.add(admitted=2, shard="s")
    c = hub.counters
    assert (c.llm_calls, c.llm_cached, c.llm_failed, c.tokens) == (3, 1, 1, 1000)
    assert c.projected_cost_usd == 0.002 * 10 / 2
    text = describe(c)
    assert "3 requests (1 cached, 1 failed)" in text and "1,000 tokens" in text
    assert "$0.0020" in text and "(projected $0.0100)" in text


def test_a_run_without_model_calls_shows_only_admissions_and_cost():
    hub = ProgressHub()
    hub.reset(5)
    hub.add(admitted=1, rejected=2)
    assert describe(hub.counters) == "admitted · 2 rejected · $0.0000"


def test_settling_a_cached_shard_adds_only_what_was_not_seen_live():
    hub = ProgressHub()
    hub.reset(4)
    hub.record_call(_call(), shard="a")
    hub.settle("a", admitted=1, rejected=0, cost_usd=0.002, llm_calls=1, llm_cached=0, llm_failed=0, tokens=1000)
    hub.settle("b", admitted=3, rejected=1, cost_usd=0.0, llm_calls=3, llm_cached=3, llm_failed=0, tokens=0)
    c = hub.counters
    assert (c.admitted, c.llm_calls, c.llm_cached, c.tokens) == (4, 4, 3, 1000)
