"""The stages' worker processes (tasks.pool): the same environments land with or without them, progress counts each
environment as it is admitted, the LLM budget holds, and a worker reads the run's environment."""

from __future__ import annotations

import datetime as dt
import os
import time

import pytest

from setter.budget import CostBudget
from tasks import pool
from tasks.commit import commit
from tasks.common import StageCounts, Staged
from tasks.land import land_result
from tasks.plan import plan_shards
from tasks.progress import ProgressHub, following
from tasks.rounds import run_shard
from tests.setter.llm_script import ScriptedModel, answer
from warehouse.catalog import run_query
from warehouse.location import resolve_warehouse

DATE = "2026-05-07"
# routing and ecommerce_365 solve while sampling (the sample stage hands those solutions to the solve stage)
FAMILIES = "knapsack,routing,ecommerce_365"


@pytest.fixture
def processes():
    """Run the test's stages with two worker processes, and none again afterwards."""
    pool.configure(2)
    yield
    pool.configure(0)


def run_stages(warehouse: str, shards, run_id: str, budget: CostBudget | None = None):
    """The stage bodies in the order the generate flow calls them (without Prefect)."""
    landed = []
    for shard in shards:
        landed.append(land_result(warehouse, run_shard(shard, budget), run_id))
    return landed


def rows(warehouse: str, sql: str) -> list[dict]:
    return run_query(resolve_warehouse(warehouse), sql).to_pylist()


def committed(warehouse: str, landed, run_id: str) -> None:
    """Commit the landed shards, so that queries see them."""
    commit(warehouse, run_id, None, DATE, {"count": sum(s.admitted for s in landed)}, landed, 0, [],
           dt.datetime.now(dt.UTC))


def test_worker_processes_land_the_same_environments_and_attempts(tmp_path):
    shards = plan_shards(DATE, 24, FAMILIES, shard_size=5)
    results = {}
    for processes in (0, 2):
        pool.configure(processes)
        try:
            warehouse = str(tmp_path / f"wh-{processes}")
            committed(warehouse, run_stages(warehouse, shards, "run"), "run")
            results[processes] = (
                rows(warehouse, "SELECT env_id FROM environments ORDER BY env_id"),
                rows(warehouse, "SELECT instance_key, attempt, admitted, reason FROM attempts ORDER BY ALL"),
                rows(warehouse, "SELECT min(compute_seconds) AS least FROM environments")[0]["least"],
            )
        finally:
            pool.configure(0)
    assert len(results[0][0]) == 24
    assert results[2][0] == results[0][0]  # the same environment ids
    assert results[2][1] == results[0][1]  # the same attempts, in the same order of instances
    assert results[0][2] > 0 and results[2][2] > 0  # compute is measured where it ran


def test_progress_counts_each_environment_as_it_is_admitted(tmp_path, processes):
    shards = plan_shards(DATE, 12, "knapsack", shard_size=12)
    seen: list[int] = []
    hub = ProgressHub()
    hub.reset(12)
    listener = seen.append
    hub.subscribe(lambda counters: listener(counters.admitted))
    with following(hub):
        run_stages(str(tmp_path / "wh"), shards, "progress")
    assert hub.counters.admitted == 12
    assert set(range(1, 13)) <= set(seen)  # every admission was counted when it happened, one at a time


def test_the_llm_budget_stops_the_run_with_worker_processes(tmp_path, monkeypatch, processes):
    monkeypatch.setenv("VHD_LLM_CACHE", str(tmp_path / "llm-cache"))
    monkeypatch.setenv("VHD_LLM_RETRY_WAIT", "0.01")
    monkeypatch.delenv("VHD_LLM_OPTIONS", raising=False)
    scripted = ScriptedModel(monkeypatch, [answer()])  # the model answers in this process
    budget = CostBudget(1e-7)  # below one call's price: the first call spends it
    shards = plan_shards(DATE, 6, "inventory_dp", setter="litellm", model="gpt-4o-mini")
    landed = run_stages(str(tmp_path / "wh"), shards, "budgeted", budget)
    admitted = sum(shard.admitted for shard in landed)
    assert 1 <= admitted < 6 and len(scripted.requests) == admitted
    assert any(shard.budget_exhausted for shard in landed)


def test_a_worker_reads_the_environment_of_the_run_that_started_it(tmp_path, monkeypatch):
    monkeypatch.setenv("VHD_CPU_HOUR_USD", "3600")  # a dollar per CPU-second: cost equals compute seconds
    pool.configure(2)  # after the change: the workers of this run see it
    try:
        shards = plan_shards(DATE, 4, "knapsack", shard_size=4)
        warehouse = str(tmp_path / "wh")
        committed(warehouse, run_stages(warehouse, shards, "priced"), "priced")
        environments = rows(warehouse, "SELECT compute_seconds, cost_usd FROM environments")
    finally:
        pool.configure(0)
    assert len(environments) == 4
    for row in environments:
        assert row["cost_usd"] == pytest.approx(row["compute_seconds"], rel=1e-9)


_MADE_HERE: list[list[int]] = []  # in a worker: the lists it made (made_items), kept alive


def made_items(n: int) -> Staged[int]:
    """A stage made in a worker: its items' list is remembered by id there."""
    items = list(range(n))
    _MADE_HERE.append(items)
    return Staged(items, StageCounts())


def taken_items(staged: Staged[int]) -> tuple[int, bool, list[int]]:
    """Where the next stage ran, whether it got the very list the worker made (not a copy read from bytes), and it."""
    return os.getpid(), any(made is staged.items for made in _MADE_HERE), staged.items


def test_a_stage_goes_to_the_worker_that_packed_its_input_which_takes_it_as_it_is(processes):
    made = pool.call_staged(made_items, 5)
    assert isinstance(made.items, pool.Packed) and made.items.count == 5
    pid, same_list, items = pool.call_staged(taken_items, made)
    assert pid == made.items.pid and same_list and items == [0, 1, 2, 3, 4]
    # a second reading (a retried stage) is read from the bytes: the first may have changed what it was given
    pid, same_list, items = pool.call_staged(taken_items, made)
    assert not same_list and items == [0, 1, 2, 3, 4]


def test_a_stage_goes_to_a_free_worker_when_its_maker_is_busy(processes):
    made = pool.call_staged(made_items, 3)
    maker = made.items.pid
    busy = [pool._pool.submit(time.sleep, 1.5, near=maker) for _ in range(pool.QUEUED_PER_WORKER)]
    started = time.monotonic()
    pid, same_list, items = pool.call_staged(taken_items, made)
    assert pid != maker and not same_list and items == [0, 1, 2]
    assert time.monotonic() - started < 1.5  # it did not wait for the maker's calls
    for call in busy:
        call.result()
