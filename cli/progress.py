"""The generation progress bar: admitted of requested, rejected attempts, cost so far."""

from __future__ import annotations

from contextlib import contextmanager

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


@contextmanager
def generation_progress(requested: int, enabled: bool = True):
    from tasks.progress import HUB

    HUB.reset(requested)
    if not enabled:
        yield
        return
    progress = Progress(TextColumn("[bold]generating"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("admitted · {task.fields[rejected]} rejected · ${task.fields[cost]:.4f}"),
                        TimeElapsedColumn(), transient=False)
    bar = progress.add_task("generate", total=requested, rejected=0, cost=0.0)

    def update(counters) -> None:
        progress.update(bar, completed=counters.admitted, rejected=counters.rejected, cost=counters.cost_usd)

    HUB.subscribe(update)
    with progress:
        try:
            yield
        finally:
            HUB.unsubscribe(update)
