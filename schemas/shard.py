"""Shards: the unit of work of every pipeline stage (a few dozen to a few hundred instances of one family)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from schemas.errors import UserError

# The most environments one run may ask for: a larger request is refused before anything is planned (a plan of
# 10**15 environments would fill memory). A larger dataset is several runs, e.g. one per date.
MAX_COUNT = 1_000_000
_SPLIT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")  # a split is part of shard keys and file names


# A plan's defaults, its named datasets and the runners, here beside the checks so that the command line offers them
# without importing Prefect (tasks.plan and flows.runners plan and run with them).
DEFAULT_COUNT = 300
DEFAULT_SHARD_SIZE = 100
DEFAULT_SPLIT = "train"
RUNNERS = ("threads", "dask")  # where the stages run: a thread pool in the flow's process, or a Dask cluster


@dataclass(frozen=True)
class PlanPart:
    """One slice of a named plan: `count` environments of these families, labelled with `split`."""

    families: str  # ids or group names, as --families takes them
    count: int
    split: str


# The paper's dataset (PAPER.md): 2,200 train and 300 held-out environments (disjoint seeds: the split is
# part of every seed) from the trained families, and 800 from the eight families never trained on.
PLANS: dict[str, tuple[PlanPart, ...]] = {
    "paper": (
        PlanPart("trained", 2200, "train"),
        PlanPart("trained", 300, "held_out"),
        PlanPart("near_ood,far_ood_structure,far_ood_probe", 800, "ood"),
    ),
}


def plan_description(name: str) -> str:
    """A named plan in one line: its total and its parts."""
    parts = PLANS[name]
    listed = ", ".join(f"{part.count:,} {part.split} of {part.families.replace(',', ', ')}" for part in parts)
    return f"'{name}' = {sum(part.count for part in parts):,} environments ({listed})"


class PlanError(UserError):
    """A plan request that cannot be satisfied (bad count, split, date, family): one line for the user."""


def parse_date(value: str | None) -> str:
    """A plan's date as YYYY-MM-DD (None: today); else PlanError."""
    if value is None:
        return dt.date.today().isoformat()
    try:
        return dt.date.fromisoformat(value).isoformat()
    except (TypeError, ValueError):
        raise PlanError(f"bad date {value!r}; use YYYY-MM-DD, e.g. 2026-12-02") from None


def check_count(count: int | None) -> int | None:
    """The requested count if it is a positive integer of at most MAX_COUNT (None: the default); else PlanError."""
    if count is None:
        return None
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        raise PlanError(f"count must be a positive integer, got {count!r}")
    if count > MAX_COUNT:
        raise PlanError(f"count {count:,} is above the maximum of {MAX_COUNT:,} environments per run; generate a "
                        "larger dataset as several runs (e.g. one per --date)")
    return count


def check_split(split: str) -> str:
    """The split label if it is safe as part of a file name (letters, digits, '_', '.', '-'); else PlanError."""
    if not isinstance(split, str) or not _SPLIT.match(split):
        raise PlanError(f"split {split!r} must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or "
                        "digit (it is part of file names), e.g. train or held_out")
    return split


def check_families(families: str | None) -> str | None:
    """A --families value unless it is given but empty (None means every family); else PlanError."""
    if families is not None and (not isinstance(families, str) or not families.strip()):
        raise PlanError("--families is empty; give family ids or group names (see vhd families), or leave it out "
                        "for every family")
    return families


class ShardSpec(BaseModel):
    """One shard of a plan. Every seed is derived from these fields, so a plan always yields the same data."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    date: str
    family: str
    family_version: int
    split: str
    index: int = Field(ge=0)
    count: int = Field(ge=1)  # admitted environments this shard must deliver
    size: int  # the (first) cell's knobs
    horizon: int
    # the size x horizon cells the shard cycles through, instance i taking cells[i % len(cells)]; None: (size, horizon)
    cells: tuple[tuple[int, int], ...] | None = None
    setter: str = "template"
    model: str | None = None
    fallback_model: str | None = None  # tried when the model fails after its retries
    max_attempts: int = Field(default=3, ge=1)  # renderings tried per instance
    difficulty: str | None = None  # the tier asked for (mechanisms.base.TIERS); None: the family's plain grid

    @property
    def key(self) -> str:
        """A content hash: the same shard always has the same key (and file names)."""
        unasked = {name for name in ("difficulty", "cells") if getattr(self, name) is None}
        blob = json.dumps(self.model_dump(mode="json", exclude=unasked), sort_keys=True).encode()
        return f"{self.family}-{self.split}-{self.index:04d}-{hashlib.sha256(blob).hexdigest()[:12]}"

    @property
    def seed(self) -> int:
        """The family seed of the shard: from date, family, split and index (not from count or setter)."""
        blob = f"{self.date}|{self.family}|{self.family_version}|{self.split}|{self.index}|{self.size}|{self.horizon}"
        if self.difficulty is not None:
            blob += f"|{self.difficulty}"
        if self.cells is not None:
            blob += "|" + ",".join(f"{size}x{horizon}" for size, horizon in self.cells)
        return int(hashlib.sha256(blob.encode()).hexdigest()[:15], 16)

    def cell(self, index: int) -> tuple[int, int]:
        """The (size, horizon) of the shard's instance `index`."""
        if self.cells is None:
            return self.size, self.horizon
        return self.cells[index % len(self.cells)]

    def instance_key(self, index: int) -> str:
        return f"{self.date}/{self.family}/{self.split}/{self.index}/{index}"


class Instance(BaseModel):
    """One sampled parameter set (parameters as data, so it serialises and caches)."""

    model_config = ConfigDict(extra="forbid")
    key: str
    index: int
    seed: list[int]
    size: int
    horizon: int
    params: dict[str, Any]


class CallRecord(BaseModel):
    """One LLM call, as it lands in llm_calls."""

    model_config = ConfigDict(extra="forbid")
    call_id: str
    instance_key: str
    attempt: int
    stage: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    cost_source: str
    latency_s: float
    cache_hit: bool
    error: str | None = None
