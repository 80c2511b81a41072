"""The litellm setter: a model writes the rendering as schema-constrained JSON; nothing it writes is executed.

The model names the tools, describes them, binds each to one of the mechanism's operations and writes the
narrative; trusted code builds the argument schemas and appends the instance facts, so numbers come from
the solved model, never from the model's text.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mechanisms.base import Mechanism
from schemas.envspec import Entity, Rendering, ToolSpec
from schemas.shard import CallRecord
from setter.base import RenderFailed
from setter.corpus import Passage, choose_passage
from setter.template import bindable_operations, compose_instructions

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price map at import


class ToolDraft(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str
    operation: str
    argument_names: dict[str, str] = Field(default_factory=dict)  # operation argument -> tool argument


class RenderingDraft(BaseModel):
    """Exactly what the model is asked to write."""

    model_config = ConfigDict(extra="forbid")
    title: str
    intro: str
    goal: str
    entities: list[Entity]
    tools: list[ToolDraft]


def draft_schema() -> dict[str, Any]:
    return RenderingDraft.model_json_schema()


def build_prompt(mechanism: Mechanism, params, passage: Passage, feedback: str | None) -> list[dict[str, str]]:
    operations = [{"operation": op.name, "kind": op.kind, "does": op.summary, "arguments": sorted(op.args)}
                  for op in bindable_operations(mechanism, params)]
    system = ("You design tool-calling environments for training agents. Write JSON only, matching the schema. "
              "Never write any number from the problem: the facts are added by the system.")
    user = (f"Problem family: {mechanism.id} ({mechanism.summary}).\nSetting (use its names and vocabulary):\n"
            f"{passage.text}\nVocabulary: {json.dumps(passage.vocab)}\n\nWrite: a title; an intro addressed to the "
            f"agent in its role; the goal; 4-6 entities of the domain; and one tool per operation below (at least "
            f"10 tools), each with a snake_case name fitting the setting, a one-sentence description, the "
            f"operation it is bound to, and argument_names renaming each operation argument.\nOperations: "
            f"{json.dumps(operations)}\nJSON schema: {json.dumps(draft_schema())}")
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    if feedback:
        messages.append({"role": "user", "content": f"Your previous rendering was rejected: {feedback}. Fix it."})
    return messages


def llm_options() -> dict[str, Any]:
    """Extra litellm arguments from $VHD_LLM_OPTIONS (JSON), e.g. {"api_base": "http://127.0.0.1:8080/v1"}."""
    raw = os.environ.get("VHD_LLM_OPTIONS")
    if not raw:
        return {}
    try:
        options = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ValueError(f"VHD_LLM_OPTIONS is not valid JSON: {error.msg}") from None
    if not isinstance(options, dict):
        raise ValueError("VHD_LLM_OPTIONS must be a JSON object of litellm arguments")
    return options


def custom_prices() -> dict[str, tuple[float, float]]:
    """USD per million (prompt, completion) tokens for models litellm does not price: $VHD_LLM_PRICES."""
    raw = os.environ.get("VHD_LLM_PRICES")
    return {k: (float(v[0]), float(v[1])) for k, v in json.loads(raw).items()} if raw else {}


def call_cost(model: str, response, prompt_tokens: int | None, completion_tokens: int | None):
    """(cost_usd, cost_source): custom price, else litellm's price map, else unknown (None, never 0)."""
    prices = custom_prices()
    if model in prices and prompt_tokens is not None and completion_tokens is not None:
        prompt_price, completion_price = prices[model]
        return (prompt_tokens * prompt_price + completion_tokens * completion_price) / 1e6, "custom"
    import litellm

    try:
        return float(litellm.completion_cost(completion_response=response, model=model)), "price_map"
    except Exception:  # litellm raises when the model has no known price
        return None, "unknown"


class LitellmSetter:
    name = "litellm"

    def __init__(self, model: str):
        self.model = model

    def render(self, mechanism: Mechanism, params, outcome, instance_key: str, attempt: int, turn_budget: int,
               feedback: str | None = None) -> tuple[Rendering, list[CallRecord]]:
        import litellm

        passage = choose_passage(mechanism.id, instance_key, attempt)
        messages = build_prompt(mechanism, params, passage, feedback)
        started = time.perf_counter()
        record = CallRecord(call_id=uuid.uuid4().hex, instance_key=instance_key, attempt=attempt, stage="render",
                            model=self.model, prompt_tokens=None, completion_tokens=None, cost_usd=None,
                            cost_source="unknown", latency_s=0.0, cache_hit=False)
        try:
            response = litellm.completion(model=self.model, messages=messages, num_retries=3,
                                          response_format={"type": "json_schema", "json_schema": {
                                              "name": "rendering", "schema": draft_schema()}},
                                          **llm_options())
        except Exception as error:  # any provider failure is recorded; the attempt is rejected, not lost
            record.latency_s = time.perf_counter() - started
            record.error = f"{type(error).__name__}: {error}"[:500]
            raise RenderFailed(f"model call failed: {type(error).__name__}", [record]) from None
        usage = getattr(response, "usage", None)
        record.prompt_tokens = getattr(usage, "prompt_tokens", None)
        record.completion_tokens = getattr(usage, "completion_tokens", None)
        record.cost_usd, record.cost_source = call_cost(self.model, response, record.prompt_tokens,
                                                        record.completion_tokens)
        record.latency_s = time.perf_counter() - started
        text = response.choices[0].message.content or ""
        try:
            draft = RenderingDraft.model_validate_json(text)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "document"
            raise RenderFailed(f"malformed rendering at {where}: {first['msg']}", [record]) from None
        return self._assemble(mechanism, params, passage, draft, turn_budget), [record]

    @staticmethod
    def _assemble(mechanism: Mechanism, params, passage: Passage, draft: RenderingDraft, turn_budget: int):
        operations = {op.name: op for op in bindable_operations(mechanism, params)}
        tools = []
        for tool in draft.tools:
            op = operations.get(tool.operation)
            if op is None:  # kept as written so the validator rejects it with the precise reason
                tools.append(ToolSpec(name=tool.name, description=tool.description, kind="info",
                                      parameters={"type": "object", "properties": {}}, operation=tool.operation))
                continue
            names = {arg: tool.argument_names.get(arg, arg) for arg in op.args}
            properties = {names[arg]: {"type": spec.type, "description": spec.description or arg,
                                       **({"minimum": spec.minimum} if spec.minimum is not None else {}),
                                       **({"maximum": spec.maximum} if spec.maximum is not None else {})}
                          for arg, spec in op.args.items()}
            tools.append(ToolSpec(name=tool.name, description=tool.description, kind=op.kind,
                                  parameters={"type": "object", "properties": properties,
                                              "required": list(properties), "additionalProperties": False},
                                  operation=op.name,
                                  argument_map={t: a for a, t in names.items() if t != a}))
        instructions, written = compose_instructions(mechanism, params, passage, draft.intro, draft.goal, tools,
                                                     turn_budget)
        return Rendering(domain=passage.domain, passage_id=passage.id, title=draft.title, entities=draft.entities,
                         instructions=instructions, written_prompt=written, tools=tools)
