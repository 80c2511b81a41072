"""A run's LLM spending limit (--max-cost-usd): checked before every model call, charged after it."""

from __future__ import annotations

import threading


class BudgetExhausted(Exception):
    """The run has spent its LLM budget; no further model call is made."""


class CostBudget:
    """Thread-safe: the shards of one run render in parallel threads of one process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.limit_usd: float | None = None
        self.spent_usd = 0.0

    def start(self, limit_usd: float | None) -> None:
        if limit_usd is not None and not limit_usd > 0:
            raise ValueError(f"--max-cost-usd must be positive, got {limit_usd}")
        with self._lock:
            self.limit_usd, self.spent_usd = limit_usd, 0.0

    def check(self) -> None:
        """Raise BudgetExhausted if the limit is reached (before a call is made)."""
        with self._lock:
            if self.limit_usd is not None and self.spent_usd >= self.limit_usd:
                raise BudgetExhausted(f"the LLM budget of ${self.limit_usd:.4f} is spent "
                                      f"(${self.spent_usd:.4f} so far)")

    def charge(self, cost_usd: float | None) -> None:
        """Book a call's cost; calls of unknown cost cannot be booked (set $VHD_LLM_PRICES to count them)."""
        if cost_usd:
            with self._lock:
                self.spent_usd += cost_usd

    @property
    def exhausted(self) -> bool:
        with self._lock:
            return self.limit_usd is not None and self.spent_usd >= self.limit_usd


BUDGET = CostBudget()
