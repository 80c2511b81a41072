"""The generation progress bar: admitted of requested, rejections, model requests, tokens, cost and projection."""

from __future__ import annotations

from contextlib import contextmanager

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


def describe(counters) -> str:
    """The bar's text: what a user watching a paid run wants to see."""
    text = f"admitted · {counters.rejected} rejected"
    if counters.llm_calls:
        projected = counters.projected_cost_usd
        text += (f" · {counters.llm_calls} requests ({counters.llm_cached} cached, {counters.llm_failed} failed)"
                 f" · {counters.tokens:,} tokens · ${counters.cost_usd:.4f}"
                 + (f" (projected ${projected:.4f})" if projected is not None else ""))
    else:
        text += f" · ${counters.cost_usd:.4f}"
    return text


@contextmanager
def generation_progress(requested: int, enabled: bool = True):
    """Within the block, a run started in this thread (flows.generate.run_generate) counts into a hub of its own,
    drawn as a bar unless `enabled` is false; yields the hub."""
    from tasks.progress import ProgressHub, following

    hub = ProgressHub()
    hub.reset(requested)
    with following(hub):
        if not enabled:
            yield hub
            return
        progress = Progress(TextColumn("[bold]generating"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[status]}"), TimeElapsedColumn(), transient=False)
        bar = progress.add_task("generate", total=requested, status=describe(hub.counters))

        def update(counters) -> None:
            progress.update(bar, completed=counters.admitted, status=describe(counters))

        hub.subscribe(update)
        with progress:
            try:
                yield hub
            finally:
                hub.unsubscribe(update)
