"""Live counters of a generation run that a progress bar can follow (in-process, thread-safe).

A run's ProgressHub is made by whoever watches the run (cli.progress) and put in force with `following(hub)`: the
generate flow settles each stage's returned counts into it as the stage completes, and a stage running in the same
process also reports as it goes (each admission, each model call), through `live(key)`. The hub is a context
variable, never a global and never sent to another process: a stage in a Dask worker or a pool process reports
nothing live, and the flow settles its counts when it completes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from tasks.common import COUNT_FIELDS, StageCounts

# what a bar shows: every count but the stages' compute seconds
COUNTED = [name for name in COUNT_FIELDS if name != "seconds"]


@dataclass
class Counters(StageCounts):
    requested: int = 0

    @property
    def projected_cost_usd(self) -> float | None:
        """The run's cost if the remaining environments cost what the admitted ones did so far."""
        if not self.admitted:
            return None
        return self.cost_usd * max(self.requested, self.admitted) / self.admitted


class ProgressHub:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counters = Counters()
        self._listeners: list[Callable[[Counters], None]] = []
        self._per_key: dict[str, Counters] = {}

    def reset(self, requested: int) -> None:
        with self._lock:
            self.counters = Counters(requested=requested)
            self._per_key = {}

    def subscribe(self, listener: Callable[[Counters], None]) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: Callable[[Counters], None]) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def record_call(self, call, shard: str | None = None) -> None:
        """One model request, as it happens."""
        self.add(shard=shard, **_shown(StageCounts.of_call(call)))

    def settle(self, shard: str, **totals) -> None:
        """Bring a key's counts (a shard's, a stage's) to their final values: only what was not reported live is
        added (a stage from Prefect's cache, or from another process, reported nothing; a retried one twice)."""
        with self._lock:
            seen = self._per_key.get(shard, Counters())
        self.add(shard=shard, **{name: value - getattr(seen, name) for name, value in totals.items()})

    def add(self, shard: str | None = None, **amounts) -> None:
        unknown = set(amounts) - set(COUNTED)
        if unknown:
            raise TypeError(f"unknown counters {sorted(unknown)}")
        with self._lock:
            targets = [self.counters]
            if shard is not None:
                targets.append(self._per_key.setdefault(shard, Counters()))
            for target in targets:
                for name, amount in amounts.items():
                    setattr(target, name, getattr(target, name) + amount)
            snapshot = Counters(**vars(self.counters))
        for listener in list(self._listeners):
            listener(snapshot)


def _shown(counts: StageCounts) -> dict[str, float]:
    return {name: getattr(counts, name) for name in COUNTED}


_FOLLOWED: ContextVar[ProgressHub | None] = ContextVar("vhd_run_progress", default=None)


@contextmanager
def following(hub: ProgressHub | None) -> Iterator[ProgressHub | None]:
    """Within the block, runs started in this context (and their stage threads) count into `hub`."""
    token = _FOLLOWED.set(hub)
    try:
        yield hub
    finally:
        _FOLLOWED.reset(token)


def followed() -> ProgressHub | None:
    """The hub of the run this context works for (None: nobody follows it)."""
    return _FOLLOWED.get()


def stage_key(shard_key: str, round_number: int, stage: str) -> str:
    """What live reports and the final settling of one stage of one round of a shard are booked under."""
    return f"{shard_key}/{round_number}/{stage}"


def live(key: str) -> Callable[[StageCounts], None]:
    """How a stage reports counts as they happen, booked under `key` (stage_key): to the followed hub, if any."""
    hub = followed()
    if hub is None:
        return _nobody
    return lambda counts: hub.add(shard=key, **_shown(counts))


def settle(key: str, counts: StageCounts) -> None:
    """A stage's final counts, once it completed (see ProgressHub.settle)."""
    hub = followed()
    if hub is not None:
        hub.settle(key, **_shown(counts))


def _nobody(counts: StageCounts) -> None:
    return None
