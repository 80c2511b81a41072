"""One model call as the factory makes it: cache, budget, retries with backoff, fallback model, accounting.

Every try is a CallRecord (failed tries too: they are part of what an environment cost). The cost of a
call comes, in this order, from the cache (0, `cache`), the provider's own report (`provider`), a price
configured in $VHD_LLM_PRICES (`custom`), litellm's price map (`price_map`), else it is unknown (null,
never 0).
"""

from __future__ import annotations

import json
import logging
import os
import threading
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
    """Worth another try: a rate limit, a timeout, a 5xx, a dropped connection. Not an endpoint that nothing
    listens on or whose name does not resolve (`unreachable`): that stays so for the minutes retries would take."""
    return type(error).__name__ in TRANSIENT_ERRORS and unreachable(error) is None


def unreachable(error: BaseException) -> str | None:
    """Why the endpoint could not be reached at all, when it could not: "connection refused" (nothing listens
    there) or "its host name does not resolve", found in the exception's chain (litellm wraps the socket's error in
    openai's and httpx's); None for any other error."""
    import socket

    seen: set[int] = set()
    stack: list[BaseException | None] = [error]
    while stack:
        found = stack.pop()
        if found is None or id(found) in seen:
            continue
        seen.add(id(found))
        if isinstance(found, ConnectionRefusedError) or "Connection refused" in str(found):
            return "connection refused: nothing listens there"
        if isinstance(found, socket.gaierror) or "Name or service not known" in str(found):
            return "its host name does not resolve"
        stack += [found.__cause__, found.__context__]
    return None


UNREACHABLE_HOLD_S = 30.0  # how long an endpoint found unreachable is not called again (each call fails at once)
_unreachable: dict[str, tuple[float, str]] = {}  # endpoint -> (when it was found unreachable, the failure's line)
_unreachable_lock = threading.Lock()


def _known_unreachable(endpoint: str) -> str | None:
    """The failure line of an endpoint found unreachable less than UNREACHABLE_HOLD_S ago, else None."""
    with _unreachable_lock:
        found = _unreachable.get(endpoint)
    return found[1] if found is not None and time.monotonic() - found[0] < UNREACHABLE_HOLD_S else None


def _mark_unreachable(endpoint: str, line: str) -> None:
    """Remember it, and say it once per endpoint (a WARNING line on stderr: what the run is doing meanwhile)."""
    with _unreachable_lock:
        first = endpoint not in _unreachable
        _unreachable[endpoint] = (time.monotonic(), line)
    if first:
        logging.getLogger(__name__).warning("%s; the renders that need it are rejected meanwhile", line)


def endpoint_of(model: str, options: dict[str, Any]) -> str:
    """The endpoint a model is called at, as the user configured it: $VHD_LLM_OPTIONS' api_base, else the
    provider's default for the model."""
    base = options.get("api_base") or options.get("base_url")
    return f"{base} (model {model})" if base else f"the default endpoint of model {model}"


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
    endpoint = endpoint_of(model, options)
    known = _known_unreachable(endpoint)
    if known is not None:  # found unreachable a moment ago: not a call per render, each a wait
        raise LlmCallFailed(known, [])

    def one_try() -> str:
        if budget is not None:
            budget.check()
        started = time.perf_counter()
        try:
            # retried here only (num_retries, and the OpenAI client's own max_retries: its 2 hidden retries
            # made each try against a closed port take seconds)
            response = litellm.completion(model=model, messages=messages, max_tokens=MAX_COMPLETION_TOKENS,
                                          response_format=fmt, **{"num_retries": 0, "max_retries": 0, **options})
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
    except Exception as error:  # not transient (bad request, authentication, budget, unreachable): no retry
        if type(error).__name__ == "BudgetExhausted":
            raise
        why = unreachable(error)
        if why is not None:  # one line naming the endpoint, at once: not minutes of retries
            line = (f"cannot reach {endpoint} ({why}): start the model server or fix api_base in "
                    "$VHD_LLM_OPTIONS")
            _mark_unreachable(endpoint, line)
            raise LlmCallFailed(line, tries) from None
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
