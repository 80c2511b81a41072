"""A run's LLM spending limit (--max-cost-usd): checked before every model call, charged after it.

The generate flow makes one CostBudget per run and hands it to the stages that render; a stage puts it in force for
its model calls with `spending(budget)` (a context variable, so the setters need not pass it along). Nothing here is
global: two runs in one process keep two budgets, and none is sent to another process.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from schemas.errors import UserError


class BudgetExhausted(Exception):
    """The run has spent its LLM budget; no further model call is made."""


class CostBudget:
    """Thread-safe: the shards of one run render in parallel threads of one process."""

    def __init__(self, limit_usd: float | None = None) -> None:
        if limit_usd is not None and not limit_usd > 0:
            raise UserError(f"--max-cost-usd must be positive, got {limit_usd}")
        self._lock = threading.Lock()
        self.limit_usd = limit_usd
        self.spent_usd = 0.0

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

    def __reduce__(self):
        raise TypeError("a CostBudget is one process's counter and is never sent to another process (an LLM setter "
                        "renders in the flow's threads, whichever runner does the CPU work)")


_IN_FORCE: ContextVar[CostBudget | None] = ContextVar("vhd_llm_budget", default=None)


@contextmanager
def spending(budget: CostBudget | None) -> Iterator[CostBudget | None]:
    """Within the block, model calls are checked against and charged to `budget` (None: no limit)."""
    token = _IN_FORCE.set(budget)
    try:
        yield budget
    finally:
        _IN_FORCE.reset(token)


def in_force() -> CostBudget | None:
    """The budget the model calls of this context are charged to (None: no limit)."""
    return _IN_FORCE.get()
