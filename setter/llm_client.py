"""One model call as the factory makes it: cache, budget, retries with backoff, fallback model, accounting.

Every try is a CallRecord (failed tries too: they are part of what an environment cost). The cost of a
call comes, in this order, from the cache (0, `cache`), the provider's own report (`provider`), a price
configured in $VHD_LLM_PRICES (`custom`), litellm's price map (`price_map`), else it is unknown (null,
never 0).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from tenacity import RetryError, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from schemas.errors import UserError
from schemas.shard import CallRecord
from setter import llm_cache
from setter.budget import in_force

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price map at import

TRANSIENT_ERRORS = {"RateLimitError", "Timeout", "APIConnectionError", "ServiceUnavailableError",
                    "InternalServerError", "APIError"}
DEFAULT_RETRIES = 3  # further tries of a model after a transient error
MAX_COMPLETION_TOKENS = 1500  # a rendering is ~500 tokens; bounds a runaway answer

# Who hears of each model call as it is made (the stage that renders: it counts the calls live for the progress bar);
# None: nobody. A context variable, set by the caller with `reporting_calls`: the setter between them passes nothing on.
_LISTENER: ContextVar[Callable[[CallRecord], None] | None] = ContextVar("vhd_llm_call_listener", default=None)


@contextmanager
def reporting_calls(listener: Callable[[CallRecord], None] | None) -> Iterator[None]:
    """Within the block, every model call (cache hits and failed tries too) is reported to `listener` as it ends."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


class LlmCallFailed(Exception):
    """Every try of every model failed; carries the records of the tries (they still count)."""

    def __init__(self, reason: str, calls: list[CallRecord]):
        super().__init__(reason)
        self.calls = calls


@dataclass
class Answer:
    text: str
    calls: list[CallRecord]


def llm_options() -> dict[str, Any]:
    """Extra litellm arguments from $VHD_LLM_OPTIONS (JSON), e.g. {"api_base": "http://127.0.0.1:8080/v1"}."""
    raw = os.environ.get("VHD_LLM_OPTIONS")
    if not raw:
        return {}
    try:
        options = json.loads(raw)
    except json.JSONDecodeError as error:
        raise UserError(f"VHD_LLM_OPTIONS is not valid JSON: {error.msg}") from None
    if not isinstance(options, dict):
        raise UserError("VHD_LLM_OPTIONS must be a JSON object of litellm arguments")
    return options


def custom_prices() -> dict[str, tuple[float, float]]:
    """USD per million (prompt, completion) tokens for models litellm does not price: $VHD_LLM_PRICES."""
    raw = os.environ.get("VHD_LLM_PRICES")
    if not raw:
        return {}
    try:
        return {k: (float(v[0]), float(v[1])) for k, v in json.loads(raw).items()}
    except (ValueError, TypeError, IndexError, AttributeError):
        raise UserError('VHD_LLM_PRICES must map models to [prompt, completion] USD per million tokens, '
                        'e.g. {"openai/local": [0.2, 0.8]}') from None


def response_format(schema: dict[str, Any]) -> dict[str, Any]:
    """How the schema is sent: OpenAI's `json_schema` form (default), or `json_object` with a schema, the form
    llama.cpp's server compiles into a grammar ($VHD_LLM_RESPONSE_FORMAT=json_object; `vhd llm serve` says so)."""
    kind = os.environ.get("VHD_LLM_RESPONSE_FORMAT", "json_schema")
    if kind == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "rendering", "schema": schema}}
    if kind == "json_object":
        return {"type": "json_object", "schema": schema}
    raise UserError(f"VHD_LLM_RESPONSE_FORMAT must be json_schema or json_object, got {kind!r}")


def retries() -> int:
    raw = os.environ.get("VHD_LLM_RETRIES", str(DEFAULT_RETRIES))
    if not raw.isdigit():
        raise UserError(f"VHD_LLM_RETRIES must be a non-negative integer, got {raw!r}")
    return int(raw)


def is_transient_llm_error(error: BaseException) -> bool:
    return type(error).__name__ in TRANSIENT_ERRORS


def call_cost(model: str, response, prompt_tokens: int | None, completion_tokens: int | None):
    """(cost_usd, cost_source) of a fresh answer."""
    reported = getattr(getattr(response, "usage", None), "cost", None)
    if isinstance(reported, (int, float)) and not isinstance(reported, bool) and reported >= 0:
        return float(reported), "provider"
    prices = custom_prices()
    if model in prices and prompt_tokens is not None and completion_tokens is not None:
        prompt_price, completion_price = prices[model]
        return (prompt_tokens * prompt_price + completion_tokens * completion_price) / 1e6, "custom"
    import litellm

    try:
        return float(litellm.completion_cost(completion_response=response, model=model)), "price_map"
    except Exception:  # litellm raises when the model has no known price
        return None, "unknown"


def failed_call_cost(error: BaseException) -> tuple[float | None, str]:
    """(cost_usd, cost_source) of a call that raised. Only a refusal the provider answered with a 4xx status (bad
    request, authentication, rate limit) is known to be billed nothing; anything else (nothing listening, a lost
    connection, a timeout, a 5xx: litellm reports "Connection error." as InternalServerError 500) may or may not
    have been processed, so its cost is unknown: null, never 0."""
    status = getattr(error, "status_code", None)
    if isinstance(status, int) and 400 <= status < 500 and status != 408:
        return 0.0, "provider"
    return None, "unknown"


def complete(models: list[str], messages: list[dict[str, str]], schema: dict[str, Any], instance_key: str,
             attempt: int) -> Answer:
    """The first model that answers (after retries) wins; each try is recorded."""
    options = llm_options()
    calls: list[CallRecord] = []
    errors = []
    for model in models:
        key = llm_cache.call_key(model, messages, schema, options)
        cached = llm_cache.lookup(key)
        if cached is not None:
            record = _record(model, instance_key, attempt, 0.0, cache_hit=True,
                             prompt_tokens=cached.get("prompt_tokens"),
                             completion_tokens=cached.get("completion_tokens"), cost_usd=0.0, cost_source="cache")
            calls.append(record)
            _publish(record)
            return Answer(cached["text"], calls)
        try:
            text, tries = _call_with_retries(model, messages, schema, options, instance_key, attempt)
        except LlmCallFailed as failure:
            calls.extend(failure.calls)
            errors.append(f"{model}: {failure}")
            continue
        calls.extend(tries)
        last = tries[-1]
        llm_cache.store(key, {"text": text, "prompt_tokens": last.prompt_tokens,
                              "completion_tokens": last.completion_tokens})
        return Answer(text, calls)
    raise LlmCallFailed("; ".join(errors), calls)


def _call_with_retries(model: str, messages, schema, options, instance_key: str, attempt: int):
    import litellm

    litellm.suppress_debug_info = True  # its "Provider List" banner on errors would go to our stdout

    tries: list[CallRecord] = []
    fmt = response_format(schema)  # a configuration error surfaces here, not as a failed call
    wait = float(os.environ.get("VHD_LLM_RETRY_WAIT", "1"))
    retrying = Retrying(stop=stop_after_attempt(retries() + 1),
                        wait=wait_exponential_jitter(initial=wait, max=30 * max(wait, 0.01), jitter=wait),
                        retry=retry_if_exception(is_transient_llm_error), reraise=False)

    budget = in_force()

    def one_try() -> str:
        if budget is not None:
            budget.check()
        started = time.perf_counter()
        try:
            response = litellm.completion(model=model, messages=messages, max_tokens=MAX_COMPLETION_TOKENS,
                                          response_format=fmt, **{"num_retries": 0, **options})
        except Exception as error:
            cost, source = failed_call_cost(error)
            record = _record(model, instance_key, attempt, time.perf_counter() - started,
                             cost_usd=cost, cost_source=source, error=f"{type(error).__name__}: {error}"[:500])
            tries.append(record)
            _publish(record)
            raise
        usage = getattr(response, "usage", None)
        prompt_tokens = getattr(usage, "prompt_tokens", None)
        completion_tokens = getattr(usage, "completion_tokens", None)
        cost, source = call_cost(model, response, prompt_tokens, completion_tokens)
        record = _record(model, instance_key, attempt, time.perf_counter() - started, prompt_tokens=prompt_tokens,
                         completion_tokens=completion_tokens, cost_usd=cost, cost_source=source)
        tries.append(record)
        if budget is not None:
            budget.charge(cost)
        _publish(record)
        return response.choices[0].message.content or ""

    try:
        return retrying(one_try), tries
    except RetryError as error:
        last = error.last_attempt.exception()
        raise LlmCallFailed(f"{type(last).__name__} after {len(tries)} tries", tries) from None
    except Exception as error:  # not transient (bad request, authentication, budget): no retry
        if type(error).__name__ == "BudgetExhausted":
            raise
        raise LlmCallFailed(f"{type(error).__name__}: {str(error)[:200]}", tries) from None


def _record(model: str, instance_key: str, attempt: int, latency: float, *, cache_hit: bool = False,
            prompt_tokens: int | None = None, completion_tokens: int | None = None, cost_usd: float | None,
            cost_source: str, error: str | None = None) -> CallRecord:
    return CallRecord(call_id=uuid.uuid4().hex, instance_key=instance_key, attempt=attempt, stage="render",
                      model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                      cost_usd=cost_usd, cost_source=cost_source, latency_s=latency, cache_hit=cache_hit,
                      error=error)


def _publish(record: CallRecord) -> None:
    listener = _LISTENER.get()
    if listener is not None:
        listener(record)
