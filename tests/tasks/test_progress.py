"""Live counters: per-environment updates, and shards whose stages came from the cache still count."""

from __future__ import annotations

from tasks.progress import ProgressHub


def test_settle_adds_only_what_a_shard_has_not_published_live():
    hub, seen = ProgressHub(), []
    hub.reset(10)
    hub.subscribe(lambda counters: seen.append(counters.admitted))
    hub.add(admitted=1, shard="a")
    hub.add(admitted=1, rejected=1, shard="a")
    hub.settle("a", admitted=2, rejected=1, cost_usd=0.0, llm_calls=0)  # nothing left to add
    hub.settle("b", admitted=5, rejected=2, cost_usd=0.5, llm_calls=7)  # a cached shard: all at landing
    c = hub.counters
    assert (c.admitted, c.rejected, c.cost_usd, c.llm_calls) == (7, 3, 0.5, 7)
    assert seen[-1] == 7 and seen[:2] == [1, 2]
