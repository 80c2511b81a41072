"""A tool-calling agent over litellm: the environment's instructions, its tools in OpenAI format, its turn budget.

Each model call is retried on transient errors (tenacity, the setter's policy and settings: $VHD_LLM_RETRIES,
$VHD_LLM_RETRY_WAIT) and costed the setter's way (provider report, $VHD_LLM_PRICES, litellm's price map, else
unknown: null, never 0). A model that still fails ends the episode with the error recorded, never raised.

A model that does not emit `tool_calls` (small local models) may answer with a JSON object
`{"tool": NAME, "arguments": {...}}` in its message text; the loop parses that as the call. With
`tool_calls="json"` the tools are described in the prompt and the answer is constrained to that object, with
the named tool's own argument schema, by a `json_object` response format with a schema (the form llama.cpp's
server compiles into a grammar).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any

from tenacity import RetryError, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from envs.environment import Environment
from schemas.errors import UserError
from setter.llm_client import call_cost, failed_call_cost, is_transient_llm_error, llm_options, retries
from setter.local_server import json_object_format

TOOL_CALL_FORMATS = ("native", "json")
MAX_SILENT_REPLIES = 2  # replies in a row without a tool call before the agent is taken to have stopped
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


@dataclass
class AgentConfig:
    """How the litellm agent plays: the model, its limits, and how tool calls travel."""

    model: str
    max_turns: int | None = None  # model calls per episode (default: the environment's turn budget)
    max_tokens: int = 512  # completion tokens per call
    temperature: float = 0.0
    tool_calls: str = "native"  # native: OpenAI tool calls; json: a schema-constrained JSON answer
    options: dict[str, Any] = field(default_factory=dict)  # extra litellm arguments, over $VHD_LLM_OPTIONS

    def __post_init__(self):
        if self.tool_calls not in TOOL_CALL_FORMATS:
            raise UserError(f"tool calls must be one of {', '.join(TOOL_CALL_FORMATS)}, got {self.tool_calls!r}")
        if self.max_turns is not None and self.max_turns < 1:
            raise UserError(f"--max-turns must be at least 1, got {self.max_turns}")
        if self.max_tokens < 1:
            raise UserError(f"--max-tokens must be at least 1, got {self.max_tokens}")


@dataclass
class LlmUsage:
    """What the episode's model calls cost: None for tokens or USD that are unknown (never 0)."""

    calls: int = 0
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    cost_usd: float | None = 0.0
    error: str | None = None

    def add(self, prompt_tokens: int | None, completion_tokens: int | None, cost_usd: float | None) -> None:
        self.calls += 1
        self.prompt_tokens = None if prompt_tokens is None or self.prompt_tokens is None else \
            self.prompt_tokens + prompt_tokens
        self.completion_tokens = None if completion_tokens is None or self.completion_tokens is None else \
            self.completion_tokens + completion_tokens
        self.cost_usd = None if cost_usd is None or self.cost_usd is None else self.cost_usd + cost_usd


def system_prompt(env: Environment, config: AgentConfig) -> str:
    budget = env.spec.turn_budget
    text = f"{env.instructions}\n\nYou have {budget} tool calls in all. Call one tool at a time."
    if config.tool_calls == "json":
        lines = [f"- {t['function']['name']}({', '.join(t['function']['parameters'].get('properties', {}))}): "
                 f"{t['function']['description']}" for t in env.tools()]
        text += ('\n\nTools:\n' + "\n".join(lines) +
                 '\n\nAnswer with only a JSON object {"tool": TOOL_NAME, "arguments": {...}}.')
    return text


def answer_schema(env: Environment) -> dict[str, Any]:
    """One call of one of the tools: {"tool": NAME, "arguments": <that tool's own argument schema>}."""
    return {"anyOf": [{"type": "object", "properties": {"tool": {"const": t["function"]["name"]},
                                                        "arguments": t["function"]["parameters"]},
                       "required": ["tool", "arguments"], "additionalProperties": False} for t in env.tools()]}


def parse_content_call(content: str | None) -> tuple[str, Any] | None:
    """A tool call written as JSON in the message text ({"tool"|"name": ..., "arguments": ...}), else None."""
    if not content:
        return None
    match = _JSON_OBJECT.search(content)
    if match is None:
        return None
    try:
        data = json.loads(match.group(0), strict=False)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    name = data.get("tool", data.get("name"))
    if not isinstance(name, str):
        return None
    return name, data.get("arguments", data.get("parameters", {}))


def play_llm(env: Environment, config: AgentConfig) -> tuple[LlmUsage, list[dict[str, Any]]]:
    """Play one episode from a fresh state; returns the usage and the conversation (the model's trajectory)."""
    env.reset()
    usage = LlmUsage()
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt(env, config)},
                                      {"role": "user", "content": "Begin."}]
    max_calls = config.max_turns or env.spec.turn_budget
    silent = answers = 0
    while not env.done and answers < max_calls and silent < MAX_SILENT_REPLIES:
        message = _complete(env, config, messages, usage)
        if message is None:
            break
        answers += 1
        native = list(getattr(message, "tool_calls", None) or [])
        if native and config.tool_calls == "native":
            silent = 0
            messages.append({"role": "assistant", "content": message.content,
                             "tool_calls": [{"id": c.id, "type": "function", "function": {
                                 "name": c.function.name, "arguments": c.function.arguments}} for c in native]})
            for call in native:
                observation = env.call(call.function.name, call.function.arguments) if not env.done else \
                    json.dumps({"error": "the episode is over"})
                messages.append({"role": "tool", "tool_call_id": call.id, "content": observation})
            continue
        messages.append({"role": "assistant", "content": message.content or ""})
        parsed = parse_content_call(message.content)
        if parsed is None:
            silent += 1
            messages.append({"role": "user", "content": 'Call one of the tools. If you cannot use function calling, '
                             'answer with only {"tool": TOOL_NAME, "arguments": {...}}.'})
            continue
        silent = 0
        name, arguments = parsed
        observation = env.call(name, arguments)
        messages.append({"role": "user", "content": f"Result of {name}: {observation}"})
    return usage, messages


def _complete(env: Environment, config: AgentConfig, messages: list[dict[str, Any]], usage: LlmUsage):
    """One model answer (its message), retried on transient errors; None with usage.error set when it fails."""
    import litellm

    litellm.suppress_debug_info = True
    options = {**llm_options(), **config.options}
    request: dict[str, Any] = {"model": config.model, "messages": messages, "max_tokens": config.max_tokens,
                               "temperature": config.temperature, "num_retries": 0}
    if config.tool_calls == "native":
        request["tools"] = env.tools()
    else:
        request["response_format"] = json_object_format(answer_schema(env))
    wait = float(os.environ.get("VHD_LLM_RETRY_WAIT", "1"))
    retrying = Retrying(stop=stop_after_attempt(retries() + 1),
                        wait=wait_exponential_jitter(initial=wait, max=30 * max(wait, 0.01), jitter=wait),
                        retry=retry_if_exception(is_transient_llm_error), reraise=False)

    def one_try():
        try:
            response = litellm.completion(**request, **options)
        except Exception as error:
            usage.add(0, 0, failed_call_cost(error)[0])  # 0 only for a 4xx refusal, else unknown (null)
            raise
        tokens = getattr(response, "usage", None)
        prompt, completion = getattr(tokens, "prompt_tokens", None), getattr(tokens, "completion_tokens", None)
        cost, _source = call_cost(config.model, response, prompt, completion)
        usage.add(prompt, completion, cost)
        return response.choices[0].message

    started = time.perf_counter()
    try:
        return retrying(one_try)
    except RetryError as error:
        last = error.last_attempt.exception()
        usage.error = f"{type(last).__name__} after {usage.calls} model call(s): {str(last)[:300]}"
    except Exception as error:  # not transient (bad request, authentication): no retry
        usage.error = f"{type(error).__name__}: {str(error)[:300]}"
    usage.error = " ".join(f"{usage.error} ({time.perf_counter() - started:.1f} s)".split())
    return None
