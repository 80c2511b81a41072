"""plan: derive shard specs from (date, count, family mix, split, grid, setter)."""

from __future__ import annotations

import datetime as dt

from prefect import task

import mechanisms
from schemas.shard import ShardSpec

DEFAULT_SHARD_SIZE = 100


class PlanError(ValueError):
    """A plan request that cannot be satisfied (bad count, date, family)."""


def parse_date(value: str | None) -> str:
    if value is None:
        return dt.date.today().isoformat()
    try:
        return dt.date.fromisoformat(value).isoformat()
    except (TypeError, ValueError):
        raise PlanError(f"bad date {value!r}; use YYYY-MM-DD, e.g. 2026-12-02") from None


def plan_shards(date: str | None, count: int, families: str | None = None, split: str = "train",
                setter: str = "template", model: str | None = None,
                shard_size: int = DEFAULT_SHARD_SIZE) -> list[ShardSpec]:
    """Spread `count` admitted environments over the families, in shards of at most `shard_size`."""
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        raise PlanError(f"count must be a positive integer, got {count!r}")
    if shard_size <= 0:
        raise PlanError(f"shard size must be positive, got {shard_size}")
    day = parse_date(date)
    names = mechanisms.resolve_families(families)
    shards: list[ShardSpec] = []
    for position, family in enumerate(names):
        mechanism = mechanisms.get(family)
        share = count // len(names) + (1 if position < count % len(names) else 0)
        grid = mechanism.grid()
        index = 0
        while share > 0:
            size, horizon = grid[index % len(grid)]
            n = min(shard_size, share)
            shards.append(ShardSpec(date=day, family=family, family_version=mechanism.version, split=split,
                                    index=index, count=n, size=size, horizon=horizon, setter=setter, model=model))
            share -= n
            index += 1
    return shards


plan = task(name="plan", retries=0)(plan_shards)
