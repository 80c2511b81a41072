"""Retries only on transient errors; the cache key is the stage, the shard's content and the code version."""

from __future__ import annotations

from types import SimpleNamespace

import litellm

from tasks.common import ShardStagePolicy, is_transient
from tasks.plan import plan_shards


def test_only_transient_errors_are_retried():
    assert is_transient(TimeoutError("slow"))
    assert is_transient(ConnectionError("reset"))
    assert is_transient(litellm.RateLimitError("429", llm_provider="openai", model="m"))
    assert not is_transient(ValueError("bad data"))
    assert not is_transient(KeyError("bug"))
    assert not is_transient(None)


def test_the_cache_key_follows_the_shard_content_not_the_run():
    first, second = plan_shards("2026-06-01", 150, "lp", shard_size=100)[:2]
    policy = ShardStagePolicy()
    ctx = SimpleNamespace(task=SimpleNamespace(name="solve"))
    key = policy.compute_key(ctx, {"shard": first}, {"run": 1})
    assert key == policy.compute_key(ctx, {"shard": first}, {"run": 2})
    assert key != policy.compute_key(ctx, {"shard": first}, {"warehouse": "/another/warehouse"})
    assert key != policy.compute_key(ctx, {"shard": second}, {})
    assert key != policy.compute_key(SimpleNamespace(task=SimpleNamespace(name="render")), {"shard": first}, {})
    assert policy.compute_key(ctx, {"nothing": 1}, {}) is None
