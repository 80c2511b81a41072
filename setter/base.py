"""What every setter provides: a rendering of one solved instance, plus the LLM calls it made."""

from __future__ import annotations

from typing import Protocol

from mechanisms.base import Mechanism, Outcome
from schemas.envspec import Rendering
from schemas.shard import CallRecord


class RenderFailed(Exception):
    """The setter could not produce a rendering; carries the calls it made (they still cost money)."""

    def __init__(self, reason: str, calls: list[CallRecord] | None = None):
        super().__init__(reason)
        self.calls = calls or []


class Setter(Protocol):
    name: str

    def render(self, mechanism: Mechanism, params, outcome: Outcome, instance_key: str, attempt: int,
               turn_budget: int, feedback: str | None) -> tuple[Rendering, list[CallRecord]]:
        """Render one instance; attempt > 1 carries the validator's rejection reason as feedback."""
        ...
