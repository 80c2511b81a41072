"""Live counters of a generation run that a progress bar can follow (in-process, thread-safe)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Counters:
    requested: int = 0
    admitted: int = 0
    rejected: int = 0
    cost_usd: float = 0.0
    llm_calls: int = 0


class ProgressHub:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counters = Counters()
        self._listeners: list[Callable[[Counters], None]] = []
        self._per_shard: dict[str, Counters] = {}

    def reset(self, requested: int) -> None:
        with self._lock:
            self.counters = Counters(requested=requested)
            self._per_shard = {}

    def subscribe(self, listener: Callable[[Counters], None]) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: Callable[[Counters], None]) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def settle(self, shard: str, admitted: int, rejected: int, cost_usd: float, llm_calls: int) -> None:
        """Bring a shard's counts to their final values (a cached stage published nothing live)."""
        with self._lock:
            seen = self._per_shard.get(shard, Counters())
        self.add(admitted - seen.admitted, rejected - seen.rejected, cost_usd - seen.cost_usd,
                 llm_calls - seen.llm_calls, shard=shard)

    def add(self, admitted: int = 0, rejected: int = 0, cost_usd: float = 0.0, llm_calls: int = 0,
            shard: str | None = None) -> None:
        with self._lock:
            if shard is not None:
                seen = self._per_shard.setdefault(shard, Counters())
                seen.admitted += admitted
                seen.rejected += rejected
                seen.cost_usd += cost_usd
                seen.llm_calls += llm_calls
            c = self.counters
            c.admitted += admitted
            c.rejected += rejected
            c.cost_usd += cost_usd
            c.llm_calls += llm_calls
            snapshot = Counters(**vars(c))
        for listener in list(self._listeners):
            listener(snapshot)


HUB = ProgressHub()
