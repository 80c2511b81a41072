"""The machine running out of something (a full disk, the file-size limit, open files, memory) is one line per
command (issue 31): what ran out, where, what to do, exit code 1; no traceback and no ERROR log line.

Such an error reaches the command two ways. Raised through the command (`vhd warehouse compact`, `vhd export`), it
is caught at cli.main's boundary (`line_of`). Raised in a Prefect task (a shard's landing on a full disk), Prefect
logs it, with its traceback, once per task run, and the run goes on to its summary: `watch_prefect_logs` drops those
log records (the task run's Failed state keeps the message in Prefect's UI) and remembers the first, and cli.main
prints it as the command's one line and exits 1 (`seen`).
"""

from __future__ import annotations

import logging
import re

from schemas.errors import ResourceExhausted, exhausted

# the loggers Prefect's engine reports a failed task or flow run on
PREFECT_RUN_LOGGERS = ("prefect.task_runs", "prefect.flow_runs")
# a failed state's message, logged without the exception itself ("... encountered an exception OSError: [Errno 28]")
_NAMED_IN_TEXT = re.compile(r"ResourceExhausted|MemoryError|\[Errno (?:23|24|27|28|122)\]")
_seen: list[ResourceExhausted] = []


def line_of(error: BaseException) -> str | None:
    """The one line for `error` when it is the machine running out of something, else None (a bug: traceback)."""
    found = exhausted(error)
    return None if found is None else str(found)


class _DropExhaustion(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        found = exhausted(error) if error is not None else None
        if found is not None:
            if not _seen:
                _seen.append(found)
            return False
        return not _NAMED_IN_TEXT.search(record.getMessage())


def watch_prefect_logs() -> None:
    """Drop Prefect's log records of task and flow runs that failed on an exhausted resource (their traceback and
    the "Finished in state Failed" line), remembering the first for `seen`. Prefect's logging configuration keeps a
    logger's filters, so this may run before or after `import prefect`."""
    for name in PREFECT_RUN_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropExhaustion) for f in logger.filters):
            logger.addFilter(_DropExhaustion())


def seen() -> str | None:
    """The line of the first exhausted resource a Prefect run reported in this process, if any."""
    return str(_seen[0]) if _seen else None
