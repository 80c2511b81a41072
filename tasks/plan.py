"""plan: derive shard specs from (date, count, family mix, split, grid, setter)."""

from __future__ import annotations

from prefect import task

import mechanisms
from mechanisms.base import TIERS
from schemas.shard import (  # noqa: F401 - the plan's defaults and checks live with ShardSpec (no Prefect)
    DEFAULT_COUNT,
    DEFAULT_SHARD_SIZE,
    DEFAULT_SPLIT,
    MAX_COUNT,
    PLANS,
    PlanError,
    PlanPart,
    ShardSpec,
    check_count,
    check_families,
    check_split,
    parse_date,
)


def plan_total(plan_name: str | None, count: int | None) -> int:
    """The environments a request asks for: the named plan's total, or `count` (default 300)."""
    if plan_name is None:
        return DEFAULT_COUNT if count is None else count
    return sum(part.count for part in named_plan(plan_name))


def named_plan(plan_name: str) -> tuple[PlanPart, ...]:
    try:
        return PLANS[plan_name]
    except KeyError:
        raise PlanError(f"unknown plan {plan_name!r}; known plans: {', '.join(sorted(PLANS))}") from None


def plan_shards(date: str | None, count: int | None = None, families: str | None = None, split: str = DEFAULT_SPLIT,
                setter: str = "template", model: str | None = None,
                shard_size: int = DEFAULT_SHARD_SIZE, plan_name: str | None = None,
                fallback_model: str | None = None, difficulty: str | None = None) -> list[ShardSpec]:
    """Spread `count` admitted environments over the families, in shards of at most `shard_size`.

    With `plan_name` (e.g. "paper") the named plan fixes the counts, families and splits instead. With `difficulty`
    (a tier of mechanisms.base.TIERS) each family draws from that tier's cells, with its turn budget, and admits
    only environments measured at that tier.
    """
    check_difficulty(difficulty)
    if plan_name is not None:
        if count is not None or families is not None:
            raise PlanError(f"plan {plan_name!r} fixes the count and the families; drop --count and --families")
        named = named_plan(plan_name)
        return [shard for part in named for shard in plan_shards(date, part.count, part.families, part.split,
                                                                  setter, model, shard_size,
                                                                  fallback_model=fallback_model,
                                                                  difficulty=difficulty)]
    count = DEFAULT_COUNT if count is None else check_count(count)
    check_split(split)
    check_families(families)
    if shard_size <= 0:
        raise PlanError(f"shard size must be positive, got {shard_size}")
    day = parse_date(date)
    names = mechanisms.resolve_families(families)
    shards: list[ShardSpec] = []
    for position, family in enumerate(names):
        mechanism = mechanisms.get(family)
        share = count // len(names) + (1 if position < count % len(names) else 0)
        cells = mechanism.grid() if difficulty is None else list(mechanism.tiers()[difficulty].grid)
        cells = cells[:share]  # a share smaller than the grid takes its easiest cells
        index = drawn = 0
        while share > 0:
            n = min(shard_size, share)
            # the family's instances cycle through its cells; a shard's cells start where the previous shard's ended
            # (instance i of a shard takes cells[i % len(cells)]), so every cell gets an even share
            rotated = cells[drawn % len(cells):] + cells[:drawn % len(cells)]
            (size, horizon), spanned = rotated[0], tuple(rotated) if len(rotated) > 1 else None
            shards.append(ShardSpec(date=day, family=family, family_version=mechanism.version, split=split,
                                    index=index, count=n, size=size, horizon=horizon, cells=spanned, setter=setter,
                                    model=model, fallback_model=fallback_model, difficulty=difficulty))
            share -= n
            drawn += n
            index += 1
    return shards


def check_difficulty(difficulty: str | None) -> str | None:
    """A tier name or None; else PlanError naming the tiers."""
    if difficulty is not None and difficulty not in TIERS:
        raise PlanError(f"unknown tier {difficulty!r}; choose one of {', '.join(TIERS)}")
    return difficulty


plan = task(name="plan", task_run_name="plan", retries=0)(plan_shards)
