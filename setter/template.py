"""The template setter: deterministic, zero cost, grounded in one corpus passage.

The passage supplies the narrative, entity names, units and vocabulary; the mechanism supplies the
operations that each tool is bound to. Different passages give visibly different environments.
"""

from __future__ import annotations

from mechanisms.base import Mechanism
from mechanisms.facts import rules_text, stated
from schemas.envspec import SUBMIT_PLAN, Entity, OperationSpec, Rendering, ToolSpec
from setter.corpus import Passage, choose_passage
from setter.phrasebook import (
    goal_pattern,
    observation_patterns,
    phrase,
    story_pattern,
    subject_key,
    title_pattern,
    vocabulary,
)
from setter.tools import bind_tool, bindable_operations, phrase_tool_name


def render_tool(family: str, op: OperationSpec, words: dict[str, str], taken: set[str],
                names: dict[str, str] | None = None) -> ToolSpec:
    """The phrase file's tool for `op`: its name pattern (made distinct from the names `taken`) and description."""
    name = phrase_tool_name(family, op.name, words)
    base, n = name, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    description = phrase(family, op.name, op.summary)[1].format(**words)
    return bind_tool(family, op, name, description, words, names or {})


def introduction(family: str, passage: Passage, words: dict[str, str]) -> str:
    """Who the agent is and the one task at hand: the family's story in the passage's words (a family without a
    story gets the passage's own text, which describes several tasks of the organisation)."""
    opening = f"You are the {words['role']} at {words['place']}, run by {words['organization']}."
    story = story_pattern(family)
    return f"{opening} {story.format(**words) if story is not None else passage.text}"


def observation_names(family: str, words: dict[str, str]) -> dict[str, str]:
    """The names observations show, in the passage's words."""
    return {key: pattern.format(**words) for key, pattern in observation_patterns(family).items()}


def entities(family: str, words: dict[str, str]) -> list[Entity]:
    """A small entity-relationship model of the domain."""
    subject = subject_key(family)
    return [
        Entity(name=words["organization"], attributes=["name"], relates_to=[words["place"]]),
        Entity(name=words["place"], attributes=["name", words["capacity"]], relates_to=[words[subject]]),
        Entity(name=words[subject], attributes=["id", "value", words["unit"]], relates_to=[words["supplier"]]),
        Entity(name=words["supplier"], attributes=["name", "terms"], relates_to=[words["place"]]),
        Entity(name=words["period"], attributes=["index"], relates_to=[words[subject]]),
    ]


def _with_arguments(tool: ToolSpec) -> str:
    """A step tool as the written prompt names it: its name and its arguments' names ("ship_order(crate, units)")."""
    return f"{tool.name}({', '.join(tool.parameters.get('properties', {}))})"


def compose_instructions(mechanism: Mechanism, params, passage: Passage, intro: str, goal: str,
                         tools: list[ToolSpec], turn_budget: int) -> tuple[dict[str, str], str]:
    """Instructions per mode and the written prompt; the instance facts come from the mechanism only."""
    words = passage.words(mechanism.id)
    budget = (f"You have {turn_budget} turns; every tool call spends one, probes and refused calls included. "
              f"The figures the {words['source']} posts are outside estimates, not guaranteed to be right.")
    facts = mechanism.facts(params, vocabulary(words))
    everything, rules = stated(facts), rules_text(facts)
    plan_names = "; ".join(_with_arguments(t) for t in tools if t.kind in ("decision", "clock"))
    instructions = {
        "revealed": f"{intro}\n\nGoal: {goal}\n\nThe facts: {everything}\n\nAct only through the tools. {budget}",
        "hidden": f"{intro}\n\nGoal: {goal}\n\nThe rules: {rules}\n\nThe figures are not given to you: find "
        f"them out with the probe tools. Act through the tools. {budget}",
        "written": f"{intro}\n\nGoal: {goal}\n\nThe facts: {everything}",
    }
    written_prompt = (f"{instructions['written']}\n\nAnswer with your whole plan through {SUBMIT_PLAN}: an "
                      f"ordered list of steps, each a tool and its arguments by name: {plan_names}. "
                      "A calculator is available.")
    return instructions, written_prompt


def render(mechanism: Mechanism, params, passage: Passage, turn_budget: int) -> Rendering:
    """Render one solved instance in the passage's vocabulary."""
    words = vocabulary(passage.words(mechanism.id))
    names = observation_names(mechanism.id, words)
    taken: set[str] = set()
    tools = [render_tool(mechanism.id, op, words, taken, names) for op in bindable_operations(mechanism, params)]
    goal = goal_pattern(mechanism.id, mechanism.summary)
    intro = introduction(mechanism.id, passage, words)
    instructions, written_prompt = compose_instructions(mechanism, params, passage, intro, goal.format(**words),
                                                        tools, turn_budget)
    title = title_pattern(mechanism.id).format(**words)
    return Rendering(domain=passage.domain, passage_id=passage.id, title=title,
                     entities=entities(mechanism.id, words), instructions=instructions,
                     written_prompt=written_prompt, tools=tools, observation_names=names)


class TemplateSetter:
    """Deterministic rendering from the corpus; a re-render takes another passage of the same family."""

    name = "template"

    def render(self, mechanism: Mechanism, params, outcome, instance_key: str, attempt: int, turn_budget: int,
               feedback: str | None = None):
        passage = choose_passage(mechanism.id, instance_key, attempt)
        return render(mechanism, params, passage, turn_budget), []
