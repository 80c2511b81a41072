"""plan: named plans (the paper's 3,300), difficulty cells, disjoint splits, refusals."""

from __future__ import annotations

from collections import Counter

import pytest

import mechanisms
from tasks.plan import PLANS, PlanError, plan_shards, plan_total
from tasks.sample import sample_instances


def test_the_paper_plan_has_the_papers_split_counts():
    shards = plan_shards("2026-12-01", plan_name="paper")
    per_split = Counter()
    per_group = Counter()
    for shard in shards:
        per_split[shard.split] += shard.count
        per_group[(mechanisms.get(shard.family).group, shard.split)] += shard.count
    assert per_split == {"train": 2200, "held_out": 300, "ood": 800}
    assert plan_total("paper", None) == 3300
    assert per_group[("trained", "train")] == 2200 and per_group[("trained", "held_out")] == 300
    assert sum(n for (group, split), n in per_group.items() if split == "ood" and group != "trained") == 800
    ood_families = {s.family for s in shards if s.split == "ood"}
    [ood_part] = [part for part in PLANS["paper"] if part.split == "ood"]
    assert ood_families == set(mechanisms.resolve_families(ood_part.families))
    assert not ood_families & {"inventory_dp", "routing", "negotiation"}


def test_train_and_held_out_instances_have_disjoint_seeds():
    shards = [s for s in plan_shards("2026-12-01", plan_name="paper") if s.family == "inventory_dp"]
    seeds = {split: {s.seed for s in shards if s.split == split} for split in ("train", "held_out")}
    assert seeds["train"] and seeds["held_out"] and not seeds["train"] & seeds["held_out"]
    train = next(s for s in shards if s.split == "train")
    held_out = next(s for s in shards if s.split == "held_out" and s.cells == train.cells)
    a = {str(i.params) for i in sample_instances(train, n=20)}
    b = {str(i.params) for i in sample_instances(held_out, n=20)}
    assert not a & b


def test_a_familys_share_is_spread_over_every_cell_of_its_grid():
    shards = plan_shards("2026-12-01", 120, "knapsack", shard_size=15)
    cells = Counter()
    for shard in shards:
        for index in range(shard.count):
            cells[shard.cell(index)] += 1
        assert [i.size for i in sample_instances(shard, n=3)] == [shard.cell(i)[0] for i in range(3)]
    grid = mechanisms.get("knapsack").grid()
    assert set(cells) == set(grid) and (6, 5) in cells and (11, 11) in cells
    assert max(cells.values()) - min(cells.values()) <= 1 and sum(cells.values()) == 120
    assert max(s.count for s in shards) <= 15
    assert len({s.key for s in shards}) == len(shards)


def test_a_count_smaller_than_the_grid_uses_the_first_cells():
    [shard] = plan_shards("2026-12-01", 2, "knapsack")
    assert shard.count == 2 and [shard.cell(0), shard.cell(1)] == [(6, 5), (7, 6)]


def test_a_named_plan_refuses_count_and_families():
    with pytest.raises(PlanError, match="drop --count and --families"):
        plan_shards("2026-12-01", 10, plan_name="paper")
    with pytest.raises(PlanError, match="drop --count"):
        plan_shards("2026-12-01", None, "lp", plan_name="paper")
    with pytest.raises(PlanError, match="known plans: paper"):
        plan_shards("2026-12-01", plan_name="nightly-ish")
    assert set(PLANS) == {"paper"}
