"""One guard for everything a model or a client sends: tool arguments, JSON-RPC messages, WebSocket frames, HTTP
bodies, a trainer's model replies. Every adapter (SkyRL, TRL, verifiers, completions, OpenEnv, MCP, HTTP) reads
what it is sent through `read` (text or bytes) or `check` (values a library already parsed), under the same limits:

- size: at most MAX_BYTES (1 MiB; a tool call is a few hundred bytes, a long model reply some 100 KB);
- nesting: lists and objects at most MAX_DEPTH deep in a tool call's arguments (the environment's own limit: a
  written plan's step arguments sit at depth 4), MAX_MESSAGE_DEPTH in a whole message (its envelope adds a few
  levels, so a too-deep argument is still the environment's error, not the protocol's); a value nested thousands
  deep would overflow Python's stack wherever it is shown or copied, and MCP's own parser drops a line nested a
  few hundred deep without an answer;
- integers: a literal of LONG_INT_DIGITS (1,000) or more digits is read as +-LONG_INT (schemas.strict_json), which
  messages show as "an integer of 1,000 or more digits"; Python refuses to print one of over 4,300 digits, so a
  parsed one is made the same;
- types: JSON's only (objects with string keys, lists, strings, numbers, true, false, null), and text in UTF-8.

A violation is a PayloadError (a UserError) naming what was sent and the limit; `limit` says which ("size",
"depth", "text", "json", "type"), so each adapter answers it the way its protocol answers errors: JSON-RPC -32700
or -32600, HTTP 400/413/422, a WebSocket error message, or the environment's own error observation (a turn spent),
never a crash or a dropped session.
"""

from __future__ import annotations

import json
import numbers
from typing import Any

from schemas.errors import UserError
from schemas.strict_json import LONG_INT, LONG_INT_DIGITS, LONG_INT_TEXT, loads

__all__ = ["LONG_INT_DIGITS", "LONG_INT_TEXT", "MAX_BYTES", "MAX_DEPTH", "MAX_MESSAGE_DEPTH", "PayloadError",
           "check", "nesting_exceeds", "read", "size_of"]

MAX_BYTES = 1 << 20
MAX_DEPTH = 64
MAX_MESSAGE_DEPTH = MAX_DEPTH + 8


class PayloadError(UserError):
    """What a model or a client sent is outside the limits; `limit` is "size", "depth", "text", "json" or "type".
    `parsed` is the value when it was read before the violation was found (a message too deep: its id can still be
    answered), else None."""

    def __init__(self, message: str, limit: str, parsed: Any = None) -> None:
        super().__init__(message)
        self.limit, self.parsed = limit, parsed


def size_of(data: str | bytes) -> int:
    """The size of text or bytes in bytes (text as UTF-8)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return len(data)
    return len(data) if data.isascii() else len(data.encode("utf-8", "surrogatepass"))


def too_large(what: str, size: int, max_bytes: int = MAX_BYTES) -> PayloadError:
    return PayloadError(f"{what}: {size:,} bytes, over the limit of {max_bytes:,} bytes", "size")


def too_deep(what: str, max_depth: int, parsed: Any = None) -> PayloadError:
    return PayloadError(f"lists or objects nest more than {max_depth} deep in {what}", "depth", parsed)


def read(data: str | bytes, what: str, max_bytes: int = MAX_BYTES, max_depth: int = MAX_MESSAGE_DEPTH) -> Any:
    """The JSON value of `data` (text, or bytes in UTF-8) under the limits; PayloadError naming `what` (e.g. "the
    body") otherwise. Integers of any length are read (see the module); the size is checked before anything else."""
    size = size_of(data)
    if size > max_bytes:
        raise too_large(what, size, max_bytes)
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as error:
            raise PayloadError(f"{what} is not UTF-8 text (byte {error.start})", "text") from None
    try:
        value = loads(data)
    except json.JSONDecodeError as error:
        raise PayloadError(f"{what} is not JSON ({error.msg} at character {error.pos})", "json") from None
    except RecursionError:  # the parser's own stack limit: far over max_depth
        raise too_deep(what, max_depth) from None
    if nesting_exceeds(value, max_depth):
        raise too_deep(what, max_depth, value)
    return value


def check(value: Any, what: str, max_depth: int = MAX_MESSAGE_DEPTH, max_bytes: int = MAX_BYTES) -> Any:
    """`value` (as a library parsed it, e.g. a trainer's tool-call arguments) made what the same JSON text reads as
    (a copy): tuples become lists, NumPy-like numbers Python's, an integer of LONG_INT_DIGITS or more digits
    +-LONG_INT. PayloadError when it holds a type JSON has no value for, a key that is not a string, lists or
    objects more than `max_depth` deep, or more than about `max_bytes` of content. Walked without recursion."""
    budget = max_bytes
    top: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, int]] = [(value, top, 0, 0)]  # (item, its container's copy, key, depth)
    while stack:
        item, parent, key, depth = stack.pop()
        if isinstance(item, dict):
            if depth >= max_depth:
                raise too_deep(what, max_depth)
            copy: Any = {}
            parent[key] = copy
            for name, child in item.items():
                if not isinstance(name, str):
                    raise PayloadError(f"{what}: a key of type {type(name).__name__}; JSON object keys are "
                                       "strings", "type")
                budget -= len(name) + 4
                copy[name] = None  # keeps the keys' order
                stack.append((child, copy, name, depth + 1))
        elif isinstance(item, (list, tuple)):
            if depth >= max_depth:
                raise too_deep(what, max_depth)
            copy = [None] * len(item)
            parent[key] = copy
            budget -= len(item)
            stack.extend((child, copy, index, depth + 1) for index, child in enumerate(item))
        else:
            parent[key] = _scalar(item, what)
            budget -= len(item) if isinstance(item, str) else 8
        if budget < 0:
            raise PayloadError(f"{what}: over {max_bytes:,} bytes of content, over the limit", "size")
    return top[0]


def _scalar(item: Any, what: str) -> Any:
    if item is None or isinstance(item, (str, bool, float)):
        return item
    if isinstance(item, numbers.Integral):
        number = int(item)
        if abs(number) >= LONG_INT:
            return -LONG_INT if number < 0 else LONG_INT
        return number
    if isinstance(item, numbers.Real):
        return float(item)
    raise PayloadError(f"{what}: a value of type {type(item).__name__}; send JSON values only (objects, lists, "
                       "strings, numbers, true, false, null)", "type")


def nesting_exceeds(value: Any, limit: int) -> bool:
    """Whether lists and objects nest more than `limit` deep in `value` (the top one at depth 0; walked without
    recursion)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
