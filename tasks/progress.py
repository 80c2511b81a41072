"""Live counters of a generation run that a progress bar can follow (in-process, thread-safe)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, fields


@dataclass
class Counters:
    requested: int = 0
    admitted: int = 0
    rejected: int = 0
    cost_usd: float = 0.0
    llm_calls: int = 0  # model requests made, cached answers included
    llm_cached: int = 0
    llm_failed: int = 0
    tokens: int = 0

    @property
    def projected_cost_usd(self) -> float | None:
        """The run's cost if the remaining environments cost what the admitted ones did so far."""
        if not self.admitted:
            return None
        return self.cost_usd * max(self.requested, self.admitted) / self.admitted


COUNTED = [f.name for f in fields(Counters) if f.name != "requested"]


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

    def record_call(self, call, shard: str | None = None) -> None:
        """One model request, as it happens."""
        tokens = (call.prompt_tokens or 0) + (call.completion_tokens or 0)
        self.add(llm_calls=1, llm_cached=int(call.cache_hit), llm_failed=int(call.error is not None),
                 tokens=0 if call.cache_hit else tokens, cost_usd=call.cost_usd or 0.0, shard=shard)

    def settle(self, shard: str, **totals) -> None:
        """Bring a shard's counts to their final values (a cached stage published nothing live)."""
        with self._lock:
            seen = self._per_shard.get(shard, Counters())
        self.add(shard=shard, **{name: value - getattr(seen, name) for name, value in totals.items()})

    def add(self, shard: str | None = None, **amounts) -> None:
        unknown = set(amounts) - set(COUNTED)
        if unknown:
            raise TypeError(f"unknown counters {sorted(unknown)}")
        with self._lock:
            targets = [self.counters]
            if shard is not None:
                targets.append(self._per_shard.setdefault(shard, Counters()))
            for target in targets:
                for name, amount in amounts.items():
                    setattr(target, name, getattr(target, name) + amount)
            snapshot = Counters(**vars(self.counters))
        for listener in list(self._listeners):
            listener(snapshot)


HUB = ProgressHub()
