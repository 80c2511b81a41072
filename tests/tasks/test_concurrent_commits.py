"""Two runs that land the same shards: the `runs` table counts what each run itself made visible (issue 31, 10).

Two identical `vhd generate` at once land the same deterministic shard files and both commit them; the run that
commits second made nothing new visible. Driven through `tasks.commit.commit` (no Prefect run needed), once one
after the other and once from two threads that commit at the same instant.
"""

from __future__ import annotations

import datetime as dt
import threading

import pandas as pd

from tasks.commit import commit
from tasks.land import LandedShard
from tests.warehouse.test_landing import DATE, environments_frame
from warehouse.landing import land
from warehouse.location import resolve_warehouse

SHARDS = {"inventory_dp-train-0000": [f"inventory_dp-{i:016x}" for i in range(3)],
          "inventory_dp-train-0001": [f"inventory_dp-{i:016x}" for i in range(3, 5)]}


def _landed(wh) -> list[LandedShard]:
    """Both shards landed (again): the same deterministic files every time, as an identical run lands them."""
    return [LandedShard(key, files={"environments": [land(wh, "environments", environments_frame(ids), DATE, key)]},
                        admitted=len(ids), family="inventory_dp") for key, ids in SHARDS.items()]


def _commit(location: str, run_id: str, landed: list[LandedShard]) -> dict:
    return commit(location, run_id, None, DATE, {"count": 5}, landed, 0, [], dt.datetime.now(dt.UTC))


def _runs_rows(wh) -> dict[str, int]:
    from warehouse.commits import committed_files

    frame = pd.concat([pd.read_parquet(path) for path in committed_files(wh, "runs")])
    return dict(zip(frame["run_id"], frame["new_environments"], strict=True))


def test_the_run_that_commits_the_same_shards_second_counts_none_new(tmp_path):
    location = str(tmp_path / "wh")
    wh = resolve_warehouse(location)
    first_landed, second_landed = _landed(wh), _landed(wh)  # both landed before either commits
    first = _commit(location, "run-a", first_landed)
    second = _commit(location, "run-b", second_landed)
    assert (first["admitted"], first["new_environments"]) == (5, 5)
    assert (second["admitted"], second["new_environments"]) == (5, 0)
    assert _runs_rows(wh) == {"run-a": 5, "run-b": 0}


def test_two_runs_committing_at_once_count_each_environment_once(tmp_path):
    location = str(tmp_path / "wh")
    wh = resolve_warehouse(location)
    landed = {run: _landed(wh) for run in ("run-a", "run-b")}
    start = threading.Barrier(2)
    results: dict[str, dict] = {}

    def run(run_id: str) -> None:
        start.wait()
        results[run_id] = _commit(location, run_id, landed[run_id])

    threads = [threading.Thread(target=run, args=(run_id,)) for run_id in landed]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(r["new_environments"] for r in results.values()) == [0, 5]
    assert all(r["admitted"] == 5 for r in results.values())
    assert sorted(_runs_rows(wh).values()) == [0, 5]
