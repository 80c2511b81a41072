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

    def reset(self, requested: int) -> None:
        with self._lock:
            self.counters = Counters(requested=requested)

    def subscribe(self, listener: Callable[[Counters], None]) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: Callable[[Counters], None]) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def add(self, admitted: int = 0, rejected: int = 0, cost_usd: float = 0.0, llm_calls: int = 0) -> None:
        with self._lock:
            c = self.counters
            c.admitted += admitted
            c.rejected += rejected
            c.cost_usd += cost_usd
            c.llm_calls += llm_calls
            snapshot = Counters(**vars(c))
        for listener in list(self._listeners):
            listener(snapshot)


HUB = ProgressHub()
