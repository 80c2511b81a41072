"""One finished completion scored: `score_completion(env_row, messages)` replays a chat's tool calls against its
environment and returns the score, u and the error of each call that failed (offline RL, reward models, auditing
a trainer's rewards); `vhd score` on the command line.

    from integrations.completions import score_completion
    result = score_completion(row, messages)      # row: a `vhd export` row (trl, skyrl, hf, jsonl) or an EnvSpec
    result.score, result.u, result.errors         # errors: [{"call", "message", "tool", "error"}] of failed calls

`messages` is a chat in OpenAI's format. Its calls, in order, are each assistant message's `tool_calls`
(`{"function": {"name": ..., "arguments": <a JSON string or an object>}}`) or, in an assistant message without them,
each `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` of its text (the call format of the rows' prompts,
read by `parse_action` as SkyRL's environment reads a reply; a text that is only that JSON object counts too).
Everything else (system and user messages, tool results, text without a call) is context: the observations are
computed again, never read from the chat.

Each call is one step of a fresh episode, as it was when the chat was played: a mistake (an unknown tool, arguments
that are not a JSON object, a value out of range, an integer of 5,000 digits, nesting too deep to read) is the
environment's error answer and spends a turn; a call the chat does not spell out (a `<tool_call>` block that is not
a JSON call, a tool call without a name) spends a turn too, as a reply without a call does in SkyRL; a call after
the episode ended is refused without a turn. Only a malformed chat (not a list of message objects) or row raises
UserError (a ValueError), with one line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from envs.environment import Environment
from schemas import payload
from schemas.envspec import DEFAULT_MODE, EnvSpec
from schemas.errors import UserError
from schemas.payload import PayloadError
from schemas.strict_json import loads

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def tool_call_blocks(text: str) -> list[str]:
    """The text inside each `<tool_call>...</tool_call>` of a reply, stripped, in order. Found with str.find, in
    linear time: a regex search takes quadratic time over a reply of many unclosed tags."""
    blocks, start = [], 0
    while (opened := text.find(_OPEN, start)) >= 0:
        closed = text.find(_CLOSE, opened + len(_OPEN))
        if closed < 0:
            break
        blocks.append(text[opened + len(_OPEN):closed].strip())
        start = closed + len(_CLOSE)
    return blocks


def parse_action(text: str) -> tuple[str, dict[str, Any] | Any] | None:
    """(tool name, arguments) of a reply's first `<tool_call>` (or of the reply itself, a JSON object
    {"name"|"tool": ..., "arguments": {...}}, fenced or not), or None when it holds no call naming a tool: a reply
    that is not text, or over schemas.payload's size limit, holds none. The call is read under payload's limits
    (integers of any length read, as the environment's error's business); arguments that are not an object, or a
    string that does not read as one (not JSON, nested too deeply), are handed on as they are, for the
    environment's own error."""
    if not isinstance(text, str) or payload.size_of(text) > payload.MAX_BYTES:
        return None
    blocks = tool_call_blocks(text)
    candidate = blocks[0] if blocks else text.strip()
    fenced = _FENCE.match(candidate)
    if fenced:
        candidate = fenced.group(1)
    try:
        call = payload.read(candidate, "the call")
    except PayloadError:
        return None
    if not isinstance(call, dict):
        return None
    name, arguments = call.get("name", call.get("tool")), call.get("arguments", {})
    if not isinstance(name, str):
        return None
    if isinstance(arguments, str):
        try:
            read = payload.read(arguments, "arguments")
        except PayloadError:
            return name, arguments  # the environment reads it again, and answers why it is no object
        if isinstance(read, dict):
            return name, read
    return name, arguments


def guarded_step(env: Environment, name: Any, arguments: Any) -> dict[str, Any]:
    """`env.step(name, arguments)` on what a trainer's library parsed (SkyRL, TRL, verifiers, a chat's tool_calls),
    through schemas.payload's guard first: arguments given as objects are made what the same JSON text reads as (an
    integer of 1,000 or more digits, at any depth, is shown as such, not a crash); a value JSON has no type for, or
    nesting past payload.MAX_DEPTH, is the environment's error answer, a turn spent, as any mistake is."""
    if isinstance(arguments, str):
        if payload.size_of(arguments) > payload.MAX_BYTES:
            return spend_turn(env, str(payload.too_large("arguments", payload.size_of(arguments))), name)
    elif arguments is not None:
        try:
            arguments = payload.check(arguments, "arguments", max_depth=payload.MAX_DEPTH)
        except PayloadError as error:
            return spend_turn(env, str(error), name)
    if not isinstance(name, str):
        return spend_turn(env, f"the tool name must be a string, got a {type(name).__name__}")
    return env.step(name, arguments)


def spend_turn(env: Environment, error: str, name: Any = "") -> dict[str, Any]:
    """The environment's error answer `{"error": error}` to a call of `name` it could not read, a turn spent as
    any mistake spends one, and recorded so in its trajectory (after the end: its own refusal, no turn)."""
    turns = env.turns
    observation = env.step("", {})
    if env.turns == turns or "error" not in observation:
        return observation
    answer = {**observation, "error": error}
    env.trajectory[-1] = {"tool": name if isinstance(name, str) else None, "arguments": None, "result": answer}
    return answer


@dataclass
class Call:
    """One call of a chat: the index of its message, the tool's name (None when the chat does not give one), its
    arguments as written (a JSON string or an object), and why it is no call when the chat garbled it."""

    message: int
    tool: str | None
    arguments: Any = None
    malformed: str | None = None


@dataclass
class CompletionScore:
    """What a chat's calls earn: the score clip((u - u0) / (u* - u0), 0, 1), u, the turns they spent, whether the
    episode ended, how many calls the chat made, and one entry per failed call (its index among the calls, its
    message's index, its tool, the error)."""

    env_id: str
    mode: str
    score: float
    u: float
    turns: int
    done: bool
    calls: int
    errors: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def environment_of(env_row: Any, mode: str | None = None) -> Environment:
    """A fresh Environment of a trainer or export row (its own mode; `mode`, if given, must agree), of an EnvSpec
    (in `mode`, default hidden) or of an Environment (its spec, in its mode unless `mode` says otherwise)."""
    from pydantic import ValidationError

    from integrations.rows import env_from_trainer_row

    if isinstance(env_row, Environment):
        return Environment(env_row.spec, mode or env_row.mode, env_id=env_row.env_id)
    if isinstance(env_row, EnvSpec):
        return Environment(env_row, mode or DEFAULT_MODE)
    if not isinstance(env_row, Mapping):
        raise UserError(f"env_row must be a row of vhd export (a dict with spec_json and mode) or an EnvSpec, "
                        f"got {type(env_row).__name__}")
    try:
        env = env_from_trainer_row(dict(env_row))
    except ValidationError as error:
        first = error.errors()[0] if error.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()))
        raise UserError(f"the row's spec_json is not a vhdplay environment spec ({where + ': ' if where else ''}"
                        f"{first.get('msg', 'invalid')}); export the row again with vhd export") from None
    if mode is not None and mode != env.mode:
        raise UserError(f"the row is the {env.mode} mode of {env.spec.env_id}, not {mode}; pick the row of that "
                        "mode")
    return env


def completion_calls(messages: Any) -> list[Call]:
    """The calls of a chat, in order (see the module's docstring for what counts as one)."""
    if not isinstance(messages, (list, tuple)):
        raise UserError(f"messages must be a list of chat messages ({{\"role\": ..., \"content\": ...}}), got "
                        f"{type(messages).__name__}")
    calls: list[Call] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise UserError(f"message {index} is a {type(message).__name__}, not a chat message object "
                            "({\"role\": ..., \"content\": ...})")
        if message.get("role") != "assistant":
            continue
        native = message.get("tool_calls")
        if native:
            entries = native if isinstance(native, (list, tuple)) else [native]
            calls.extend(_native_call(index, entry) for entry in entries)
        else:
            calls.extend(_text_calls(index, _text(message.get("content"))))
    return calls


def score_completion(env_row: Any, messages: Any, mode: str | None = None) -> CompletionScore:
    """Replay the chat's tool calls, in order, on a fresh episode of the row's environment (see the module)."""
    env = environment_of(env_row, mode)
    calls = completion_calls(messages)
    errors: list[dict[str, Any]] = []
    for number, call in enumerate(calls):
        turns = env.turns
        if call.malformed is not None:
            observation = env.step("", {})  # spends a turn as any mistake does (or is refused after the end)
            error = call.malformed if env.turns > turns else observation.get("error")
        else:
            observation = guarded_step(env, call.tool, call.arguments)
            error = observation.get("error")
        if error is not None:
            errors.append({"call": number, "message": call.message, "tool": call.tool, "error": str(error)})
    return CompletionScore(env_id=env.env_id, mode=env.mode, score=env.score(), u=env.utility(), turns=env.turns,
                           done=env.done, calls=len(calls), errors=errors)


def messages_of(document: Any) -> list[Any]:
    """The chat of a transcript document: a list of messages, or an object holding one under "messages", or a
    prompt and a completion (TRL's conversational rows)."""
    if isinstance(document, list):
        return document
    if isinstance(document, dict):
        if isinstance(document.get("messages"), list):
            return document["messages"]
        if isinstance(document.get("completion"), list):
            prompt = document.get("prompt")
            return [*(prompt if isinstance(prompt, list) else []), *document["completion"]]
    raise UserError("the transcript must be a JSON list of chat messages, or an object with \"messages\" (or "
                    "\"prompt\" and \"completion\") lists")


def _native_call(index: int, entry: Any) -> Call:
    if not isinstance(entry, Mapping):
        return Call(index, None, malformed=f"a tool call of message {index} is a {type(entry).__name__}, not "
                                           "{\"function\": {\"name\": ..., \"arguments\": ...}}")
    function = entry.get("function") if isinstance(entry.get("function"), Mapping) else entry
    name, arguments = function.get("name"), function.get("arguments")
    if not isinstance(name, str):
        return Call(index, None, arguments, malformed=f"a tool call of message {index} names no tool "
                                                      "(function.name must be a string)")
    return Call(index, name, arguments)


def _text_calls(index: int, text: str) -> list[Call]:
    blocks = tool_call_blocks(text)
    if not blocks:  # a reply that is only the JSON call; any other text is not a call
        parsed = parse_action(text)
        return [] if parsed is None else [Call(index, *parsed)]
    calls = []
    for block in blocks:
        parsed = parse_action(block)
        calls.append(Call(index, *parsed) if parsed is not None else Call(
            index, None, malformed=f"a <tool_call> of message {index} is not a call; write "
                                   '<tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>'))
    return calls


def _text(content: Any) -> str:
    """The text of a message's content: a string, or OpenAI's list of parts ({"type": "text", "text": ...})."""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        return "".join(part.get("text", "") if isinstance(part, Mapping) and isinstance(part.get("text"), str)
                       else part if isinstance(part, str) else "" for part in content)
    return ""


def read_json(path: str, what: str) -> Any:
    """A JSON file (integers of any length read), or UserError with one line naming the problem and the fix."""
    try:
        with open(path, "rb") as handle:
            return loads(handle.read())
    except FileNotFoundError:
        raise UserError(f"no {what} at {path}") from None
    except IsADirectoryError:
        raise UserError(f"{what} {path} is a folder; give a JSON file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        reason = error.msg if isinstance(error, json.JSONDecodeError) else "not UTF-8 text"
        raise UserError(f"{what} {path} is not JSON ({reason})") from None
    except RecursionError:
        raise UserError(f"{what} {path} nests lists or objects too deeply to read") from None
