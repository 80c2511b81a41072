"""The litellm setter: a model writes the rendering as schema-constrained JSON; nothing it writes is executed.

The model names the tools, describes them, binds each to one of the mechanism's operations (an enum in
the schema), renames arguments if it likes, and writes the title, entities, intro and goal. Trusted code
builds the argument schemas and appends the instance facts, so numbers come from the solved model,
never from the model's text. A rejected draft is re-prompted with the validator's reason.
"""

from __future__ import annotations

import json
import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mechanisms.base import Mechanism
from schemas.envspec import Entity, OperationSpec, Rendering
from schemas.errors import UserError
from schemas.shard import CallRecord
from setter.base import RenderFailed
from setter.corpus import Passage, choose_passage
from setter.llm_client import LlmCallFailed, complete, custom_prices, llm_options, response_format, retries
from setter.phrasebook import goal_pattern, phrase, title_pattern, vocabulary
from setter.template import compose_instructions, introduction, observation_names
from setter.tools import IDENTIFIER, MAX_NAME, bind_tool, bindable_operations, phrase_tool_name
from setter.wording import wording_problem

# Short fields: a rendering is ~15 names and one-sentence descriptions. The limits keep a small local model's
# answer to ~500 tokens (llama.cpp's grammar parser also refuses string limits above 1000).
MAX_TITLE = 80
MAX_INTRO = 500
MAX_GOAL = 240
MAX_DESCRIPTION = 160


class ToolDraft(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = Field(default="", max_length=MAX_DESCRIPTION)  # compact drafts leave it to the phrasebook
    argument_names: dict[str, str] = Field(default_factory=dict)  # operation argument -> tool argument


class RenderingDraft(BaseModel):
    """Exactly what the model is asked to write: the tools keyed by the operation each is bound to."""

    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=3, max_length=MAX_TITLE)
    intro: str = Field(min_length=20, max_length=MAX_INTRO)
    goal: str = Field(min_length=10, max_length=MAX_GOAL)
    entities: list[Entity] = Field(min_length=1, max_length=10)
    tools: dict[str, ToolDraft] = Field(min_length=1, max_length=40)


def compact_drafts() -> bool:
    """$VHD_LLM_DRAFT=compact: the model names the tools and the phrasebook describes them (a third of the
    tokens; what a small local model can write in reasonable time). Default: full."""
    mode = os.environ.get("VHD_LLM_DRAFT", "full")
    if mode not in ("full", "compact"):
        raise UserError(f"VHD_LLM_DRAFT must be full or compact, got {mode!r}")
    return mode == "compact"


def draft_schema(operations: list[OperationSpec]) -> dict[str, Any]:
    """The JSON schema of a draft: one tool per operation, keyed by it, so a constrained decoder binds every
    operation exactly once and nothing else."""
    name = {"type": "string", "pattern": "^[a-z][a-z0-9_]{2,40}$"}
    if compact_drafts():
        tool = {"type": "object", "additionalProperties": False, "required": ["name"], "properties": {"name": name}}
    else:
        tool = {"type": "object", "additionalProperties": False, "required": ["name", "description"],
                "properties": {"name": name,
                               "description": {"type": "string", "minLength": 10, "maxLength": MAX_DESCRIPTION}}}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["title", "intro", "goal", "entities", "tools"],
        "properties": {
            "title": {"type": "string", "minLength": 3, "maxLength": MAX_TITLE},
            "intro": {"type": "string", "minLength": 20, "maxLength": MAX_INTRO},
            "goal": {"type": "string", "minLength": 10, "maxLength": MAX_GOAL},
            "entities": {"type": "array", "minItems": 2, "maxItems": 3, "items": {
                "type": "object", "additionalProperties": False, "required": ["name", "attributes", "relates_to"],
                "properties": {"name": {"type": "string", "maxLength": 40},
                               "attributes": {"type": "array", "items": {"type": "string", "maxLength": 30},
                                              "maxItems": 3},
                               "relates_to": {"type": "array", "items": {"type": "string", "maxLength": 40},
                                              "maxItems": 2}}}},
            "tools": {"type": "object", "additionalProperties": False, "required": [op.name for op in operations],
                      "properties": {op.name: tool for op in operations}},
        },
    }


def build_prompt(mechanism: Mechanism, params, passage: Passage, feedback: str | None) -> list[dict[str, str]]:
    operations = bindable_operations(mechanism, params)
    family_words = passage.words(mechanism.id)
    words = vocabulary(family_words)
    # a suggested name per operation (the phrasebook's, in this passage's words): names stay distinct and fit
    examples = {op.name: phrase_tool_name(mechanism.id, op.name, words) for op in operations}
    listing = "\n".join(f"- {op.name} ({op.kind}): {op.summary}; e.g. \"{examples[op.name]}\"" for op in operations)
    vocab = ", ".join(f"{k}={v}" for k, v in sorted(family_words.items()))
    system = ("You design tool-calling environments for training agents. Answer with one JSON object only. "
              "Never write a number: the figures are added by the system.")
    user = (f"Setting, whose names and vocabulary you use:\n{passage.text}\nVocabulary: {vocab}\n\n"
            f"Task family: {mechanism.summary}.\n"
            f"Write a JSON object with: title (a short title); intro (2-3 sentences to the agent, who is the "
            f"{family_words['role']} at {family_words['place']}); goal (one sentence); entities (2-3 things of "
            f"the domain, each with name, attributes, relates_to); tools (an object with one entry per operation "
            f"below, keyed by the operation, each with a distinct snake_case name fitting the setting"
            + ("" if compact_drafts() else " and a one-sentence description") + ").\n"
            f"Operations:\n{listing}")
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    if feedback:
        messages.append({"role": "user", "content": f"Your previous answer was rejected: {feedback}. "
                                                    "Write the whole JSON object again, fixed."})
    return messages


class LitellmSetter:
    name = "litellm"

    def __init__(self, model: str, fallback_model: str | None = None):
        llm_options(), custom_prices(), retries(), response_format({}), compact_drafts()  # fail before any call
        self.model = model
        self.models = [model, *([fallback_model] if fallback_model and fallback_model != model else [])]

    def render(self, mechanism: Mechanism, params, outcome, instance_key: str, attempt: int, turn_budget: int,
               feedback: str | None = None) -> tuple[Rendering, list[CallRecord]]:
        passage = choose_passage(mechanism.id, instance_key, 1)  # re-prompts fix the same setting
        operations = bindable_operations(mechanism, params)
        try:
            answer = complete(self.models, build_prompt(mechanism, params, passage, feedback),
                              draft_schema(operations), instance_key, attempt)
        except LlmCallFailed as failure:
            raise RenderFailed(f"model call failed: {failure}", failure.calls) from None
        try:
            draft = parse_draft(answer.text)
            rendering = assemble(mechanism, params, passage, draft, turn_budget)
        except ValueError as error:
            raise RenderFailed(str(error), answer.calls) from None
        return rendering, answer.calls


def parse_draft(text: str) -> RenderingDraft:
    """The model's JSON as a draft, or ValueError with the first precise problem."""
    try:
        data = json.loads(text, strict=False)  # a raw newline inside a string is harmless here
    except json.JSONDecodeError as error:
        raise ValueError(f"malformed JSON: {error.msg} at character {error.pos}") from None
    try:
        return RenderingDraft.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "document"
        raise ValueError(f"malformed rendering at {where}: {first['msg']}") from None


def _repaired(mechanism: Mechanism, passage: Passage, draft: RenderingDraft, words: dict[str, str]) -> RenderingDraft:
    """Compact drafts only (a small model's): a tool name the model already used, or one that speaks a generic
    template word or another task's word, goes to the phrasebook's name for that operation; a title, story or goal
    that does so goes to the phrasebook's (full drafts are refused for these instead, with the reason as feedback)."""
    def fits(text: str) -> bool:
        return wording_problem(mechanism.id, passage.id, text) is None

    seen: set[str] = set()
    tools = {}
    for operation, tool in draft.tools.items():
        name = tool.name
        if name in seen or not fits(name):
            name = phrase_tool_name(mechanism.id, operation, words)
        seen.add(name)
        tools[operation] = tool.model_copy(update={"name": name})
    story = draft.intro if fits(draft.intro) else introduction(mechanism.id, passage, words)
    goal = draft.goal if fits(draft.goal) else goal_pattern(mechanism.id, mechanism.summary).format(**words)
    title = draft.title if fits(draft.title) else title_pattern(mechanism.id).format(**words)
    return draft.model_copy(update={"tools": tools, "intro": story, "goal": goal, "title": title})


def assemble(mechanism: Mechanism, params, passage: Passage, draft: RenderingDraft, turn_budget: int) -> Rendering:
    """Tools bound by trusted code; a draft that binds badly is refused here with the precise reason."""
    operations = {op.name: op for op in bindable_operations(mechanism, params)}
    words = vocabulary(passage.words(mechanism.id))
    shown = observation_names(mechanism.id, words)
    if compact_drafts():
        draft = _repaired(mechanism, passage, draft, words)
    tools = []
    for operation, tool in draft.tools.items():
        if not IDENTIFIER.match(tool.name):
            raise ValueError(f"invalid tool name {tool.name!r}: use lower-case letters, digits and _ (at most "
                             f"{MAX_NAME})")
        op = operations.get(operation)
        if op is None:
            raise ValueError(f"tool {tool.name!r} is bound to unknown operation {operation!r}")
        extra = sorted(set(tool.argument_names) - set(op.args))
        if extra:
            raise ValueError(f"tool {tool.name!r} renames {extra[0]!r}, which operation {op.name!r} does not take "
                             f"(it takes {sorted(op.args) or 'no arguments'})")
        description = tool.description or phrase(mechanism.id, op.name, op.summary)[1].format(**words)
        tools.append(bind_tool(mechanism.id, op, tool.name, description, words, shown, tool.argument_names))
    instructions, written = compose_instructions(mechanism, params, passage, draft.intro, draft.goal, tools,
                                                 turn_budget)
    return Rendering(domain=passage.domain, passage_id=passage.id, title=draft.title, entities=draft.entities,
                     instructions=instructions, written_prompt=written, tools=tools,
                     observation_names=shown)
