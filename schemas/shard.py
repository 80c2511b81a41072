"""Shards: the unit of work of every pipeline stage (a few dozen to a few hundred instances of one family)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ShardSpec(BaseModel):
    """One shard of a plan. Every seed is derived from these fields, so a plan always yields the same data."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    date: str
    family: str
    family_version: int
    split: str
    index: int = Field(ge=0)
    count: int = Field(ge=1)  # admitted environments this shard must deliver
    size: int
    horizon: int
    setter: str = "template"
    model: str | None = None
    fallback_model: str | None = None  # tried when the model fails after its retries
    max_attempts: int = Field(default=3, ge=1)  # renderings tried per instance

    @property
    def key(self) -> str:
        """A content hash: the same shard always has the same key (and file names)."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()
        return f"{self.family}-{self.split}-{self.index:04d}-{hashlib.sha256(blob).hexdigest()[:12]}"

    @property
    def seed(self) -> int:
        """The family seed of the shard: from date, family, split and index (not from count or setter)."""
        blob = f"{self.date}|{self.family}|{self.family_version}|{self.split}|{self.index}|{self.size}|{self.horizon}"
        return int(hashlib.sha256(blob.encode()).hexdigest()[:15], 16)

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
