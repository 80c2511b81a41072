"""The project's error for bad input, which every layer raises and the `vhd` command reports as one line.

`UserError` is a mistake of whoever gave the input (an option out of range, an unknown family, a warehouse that is
not there, a file that is not JSON): its message names the problem and the fix, and `vhd` prints it as one
`error: ...` line with exit code 2. Any other exception is a bug and keeps its traceback, a stray `ValueError`
included. It subclasses ValueError, so callers that catch ValueError (pydantic validators, library users) still do.
This module imports nothing, so every package can raise it.
"""


class UserError(ValueError):
    """Bad input: the message is one line that names the problem and how to fix it."""


class ResourceExhausted(OSError):
    """The machine ran out of something while a command worked (disk space, the file-size limit, open files,
    memory): neither bad input nor a bug. The message is one line naming the resource, where, and what to do; `vhd`
    prints it and exits 1. An OSError, so that code catching OSError (retries, clean-ups) still catches it; its
    errno is the original one (pickled too: it comes back from a worker process as it left)."""

    def __init__(self, message: str, errno: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.errno = errno

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):
        return type(self), (self.message, self.errno)


# errno values (Linux and macOS share these): what ran out, and what to do about it
_ERRNO_RESOURCES = {
    28: ("no space left on device", "free space there and run the same command again"),  # ENOSPC
    122: ("disk quota exceeded", "free space or raise the quota, and run the same command again"),  # EDQUOT
    27: ("file too large for the file-size limit (ulimit -f)",
         "raise the limit or free space, and run the same command again"),  # EFBIG
    24: ("too many open files (ulimit -n)",
         "raise the limit (ulimit -n) or use fewer --processes/--workers, and run the same command again"),  # EMFILE
    23: ("too many open files on this machine",
         "close other programs or use fewer --processes/--workers, and run the same command again"),  # ENFILE
}
RESOURCE_ERRNOS = frozenset(_ERRNO_RESOURCES)


def exhausted(error: BaseException, doing: str = "", done_note: str = "") -> ResourceExhausted | None:
    """`error` as one ResourceExhausted line when it is the machine running out of something (an OSError of
    RESOURCE_ERRNOS, a MemoryError, or a ResourceExhausted already), else None. `doing` says what was being done
    ("writing the warehouse at /data/wh"); `done_note` what that leaves ("nothing was committed half")."""
    if isinstance(error, ResourceExhausted):
        return error
    if isinstance(error, MemoryError):
        what, fix = "out of memory", "use fewer --processes/--workers or a smaller --count, and run it again"
    elif isinstance(error, OSError) and error.errno in _ERRNO_RESOURCES:
        what, fix = _ERRNO_RESOURCES[error.errno]
        if not doing and error.filename:
            doing = f"writing {error.filename}"
    else:
        return None
    where = f" {doing}" if doing else ""
    note = f"; {done_note}" if done_note else ""
    return ResourceExhausted(f"{what}{where}: {fix}{note}", error.errno if isinstance(error, OSError) else None)


def validation_line(error: Exception, shown: int = 3) -> str:
    """A pydantic ValidationError's report (several lines: each field, its problem, a link) as one line, `field:
    problem; field: problem (and N more)`; any other error as its text on one line. Duck-typed on `errors()`, so
    that this module imports nothing."""
    try:
        items = error.errors()  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - not a ValidationError: its text, on one line
        return " ".join(str(error).split())
    problems = []
    for item in items[:shown]:
        where = ".".join(str(part) for part in item.get("loc", ()))
        message = " ".join(str(item.get("msg", "invalid")).removeprefix("Value error, ").split())
        problems.append(f"{where}: {message}" if where else message)
    more = len(items) - len(problems)
    return "; ".join(problems) + (f" (and {more} more)" if more > 0 else "")
