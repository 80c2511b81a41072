"""schemas.payload, the one guard of what a model or a client sends: size, nesting, integer and type limits, each
violation a PayloadError naming what was sent and the limit (the adapters' answers are tested against the real
servers and trainers: tests/serving/test_hostile_requests.py, tests/integrations/)."""

from __future__ import annotations

import pytest

from schemas.errors import UserError
from schemas.payload import (
    LONG_INT_TEXT,
    MAX_BYTES,
    MAX_DEPTH,
    MAX_MESSAGE_DEPTH,
    PayloadError,
    check,
    nesting_exceeds,
    read,
)
from schemas.strict_json import LONG_INT, dumps


def _nested(depth: int, leaf=1):
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def test_read_takes_json_within_the_limits():
    assert read('{"a": [1, 2.5, "x", true, null]}', "the body") == {"a": [1, 2.5, "x", True, None]}
    assert read(b'{"a": "\xc3\xa9"}', "the body") == {"a": "é"}
    assert read("[" * MAX_MESSAGE_DEPTH + "]" * MAX_MESSAGE_DEPTH, "the body") == _nested(MAX_MESSAGE_DEPTH - 1, [])
    assert read(" " * (MAX_BYTES - 2) + "{}", "the body") == {}


@pytest.mark.parametrize("data, limit, message", [
    (b'{"a": "\xff"}', "text", "the body is not UTF-8 text (byte 7)"),
    ('{"a": ', "json", "the body is not JSON (Expecting value at character 6)"),
    ("[" * 100_000, "depth", f"lists or objects nest more than {MAX_MESSAGE_DEPTH} deep in the body"),
    ("[" * 500 + "]" * 500, "depth", f"lists or objects nest more than {MAX_MESSAGE_DEPTH} deep in the body"),
    (" " * MAX_BYTES + "{}", "size", f"the body: {MAX_BYTES + 2:,} bytes, over the limit of {MAX_BYTES:,} bytes"),
    ("é" * (MAX_BYTES // 2 + 1), "size", "over the limit"),  # counted in UTF-8 bytes, not characters
])
def test_read_refuses_each_violation_in_one_line(data, limit, message):
    with pytest.raises(PayloadError) as raised:
        read(data, "the body")
    assert raised.value.limit == limit and message in str(raised.value) and "\n" not in str(raised.value)
    assert isinstance(raised.value, UserError)


def test_a_message_too_deep_but_readable_keeps_its_value_for_its_id():
    with pytest.raises(PayloadError) as raised:
        read('{"id": 7, "params": ' + "[" * 300 + "]" * 300 + "}", "the line")
    assert raised.value.parsed["id"] == 7
    with pytest.raises(PayloadError) as raised:
        read("[" * 100_000, "the line")
    assert raised.value.parsed is None


@pytest.mark.parametrize("digits", [1000, 5000, 100_000])
def test_integers_of_any_length_are_read_as_the_long_int(digits):
    value = read(f'{{"x": {"9" * digits}, "y": -{"9" * digits}, "z": {"9" * 999}}}', "the body")
    assert value["x"] == LONG_INT and value["y"] == -LONG_INT and value["z"] == int("9" * 999)
    assert dumps(value)  # and can be written again


def test_check_makes_parsed_values_what_the_json_text_would_read_as():
    import numpy as np

    given = {"a": (1, [10 ** 5000, -(10 ** 5000)]), "b": {"c": np.int64(3), "d": np.float32(0.5)}, "e": None}
    assert check(given, "arguments") == {"a": [1, [LONG_INT, -LONG_INT]], "b": {"c": 3, "d": 0.5}, "e": None}
    assert list(check({"z": 1, "a": 2}, "arguments")) == ["z", "a"]  # the keys' order kept
    assert given["a"][1][0] == 10 ** 5000  # a copy: what the caller holds is unchanged
    assert check("x", "arguments") == "x" and check(10 ** 5000, "arguments") == LONG_INT
    assert LONG_INT_TEXT == "an integer of 1,000 or more digits"


@pytest.mark.parametrize("value, limit, message", [
    ({"a": b"bytes"}, "type", "arguments: a value of type bytes; send JSON values only"),
    ({"a": object()}, "type", "a value of type object"),
    ({"a": 1 + 2j}, "type", "a value of type complex"),
    ({10 ** 5000: 1}, "type", "arguments: a key of type int; JSON object keys are strings"),
    ({"a": {(1, 2): 1}}, "type", "a key of type tuple"),
    ({"a": _nested(100_000)}, "depth", f"lists or objects nest more than {MAX_DEPTH} deep in arguments"),
    ({"a": "x" * (MAX_BYTES + 1)}, "size", "over the limit"),
    ({"a": [0] * (MAX_BYTES // 8)}, "size", "over the limit"),
])
def test_check_refuses_what_json_cannot_hold(value, limit, message):
    with pytest.raises(PayloadError) as raised:
        check(value, "arguments", max_depth=MAX_DEPTH)
    assert raised.value.limit == limit and message in str(raised.value)


def test_depth_is_counted_as_the_environment_counts_it():
    assert check(_nested(MAX_DEPTH), "arguments", max_depth=MAX_DEPTH) == _nested(MAX_DEPTH)
    with pytest.raises(PayloadError):
        check(_nested(MAX_DEPTH, []), "arguments", max_depth=MAX_DEPTH)
    assert not nesting_exceeds(_nested(MAX_DEPTH), MAX_DEPTH)
    assert nesting_exceeds(_nested(MAX_DEPTH, []), MAX_DEPTH)
    assert nesting_exceeds(_nested(200_000), MAX_DEPTH)  # no recursion, no stack overflow
    assert MAX_MESSAGE_DEPTH > MAX_DEPTH  # an argument too deep is the environment's error, not the protocol's


def test_the_guards_depth_is_the_environments():
    from envs import environment

    assert environment.MAX_NESTING == MAX_DEPTH
