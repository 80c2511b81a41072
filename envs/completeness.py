"""The completeness check: whatever one mode states, the hidden mode can reach.

A family declares its facts once (mechanisms.facts). For one environment this check refuses it when
- a required rule (the objective formula, how the episode ends, what happens when the turns run out) is missing,
  or a rule is not stated word for word in every mode's text, or a rule carries a hidden number;
- a fact is not stated in the revealed and written texts;
- a fact's probe is not a probe operation bound to a tool of the hidden mode;
- a number a fact states does not appear in any observation of its probe (called with every argument the family's
  probe order makes, on a fresh state); a random draw revealed only when its time comes (mechanisms.facts.drawn) is
  exempt, but the operation that reveals it must be bound to a hidden-mode tool and may not be a probe (no probe
  tells a future draw);
- a hidden parameter value (the family's secret numbers) belongs to no fact.
"""

from __future__ import annotations

import pickle
from typing import Any

import mechanisms
from mechanisms.base import ActionError, operation_calls
from mechanisms.facts import REQUIRED_RULES, Fact
from schemas.envspec import EnvSpec, OperationSpec
from setter.corpus import passage_vocabulary
from setter.phrasebook import vocabulary


class Incomplete(ValueError):
    """What the hidden mode cannot reach, in one line."""


def observed_numbers(observation: Any) -> set[float]:
    """Every number in an observation (nested objects and lists), rounded to 6 places."""
    found: set[float] = set()
    stack = [observation]
    while stack:
        value = stack.pop()
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            found.add(round(float(value), 6))
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
    return found


def operation_observations(mechanism, params, operations: list[OperationSpec]) -> dict[str, list[Any]]:
    """The observations of every call of these probe and info operations, each on a fresh state (a probe: the calls
    of the family's probe order; an info operation: every combination of its arguments)."""
    probe_calls: dict[str, list] = {}
    for action in mechanism.listing_order(mechanism.knowledge(params)):
        probe_calls.setdefault(action.op, []).append(action)
    fresh = pickle.dumps(mechanism.initial_state(params))  # a state is plain data: each call gets its own copy
    seen: dict[str, list[Any]] = {}
    for op in operations:
        calls = probe_calls.get(op.name, []) if op.kind == "probe" else operation_calls(mechanism.id, op)
        seen[op.name] = []
        for action in calls:
            try:
                seen[op.name].append(mechanism.apply(params, pickle.loads(fresh), action))
            except ActionError:  # an argument combination the operation refuses (a range whose ends cross)
                continue
    return seen


def bound_observations(spec: EnvSpec) -> dict[str, list[Any]]:
    """`operation_observations` of the probe and info operations the spec binds to tools."""
    mechanism = mechanisms.get(spec.family)
    params = mechanism.params_from_data(spec.params)
    bound = {tool.operation for tool in spec.rendering.tools}
    operations = [op for op in mechanism.operations(params) if op.kind in ("probe", "info") and op.name in bound]
    return operation_observations(mechanism, params, operations)


def check_facts(spec: EnvSpec, facts: list[Fact], observations: dict[str, list[Any]] | None = None) -> None:
    """Raise Incomplete with the first gap between the stated facts and what the hidden mode reaches
    (`observations`: bound_observations(spec), when the caller has them)."""
    mechanism = mechanisms.get(spec.family)
    params = mechanism.params_from_data(spec.params)
    keys = {fact.key for fact in facts}
    missing = [key for key in REQUIRED_RULES if key not in keys]
    if missing:
        raise Incomplete(f"{spec.family} states no {missing[0]!r} rule")
    texts = {"revealed": spec.rendering.instructions["revealed"], "written": spec.rendering.written_prompt,
             "hidden": spec.rendering.instructions["hidden"]}
    public = {round(float(x), 6) for x in mechanism.public_numbers(params)} | {float(spec.turn_budget)}
    operations = {op.name: op for op in mechanism.operations(params)}
    hidden_tools = {tool.operation for tool in spec.rendering.tools}
    observations = bound_observations(spec) if observations is None else observations
    covered: set[float] = set()
    for fact in facts:
        numbers = {round(x, 6) for x in fact.numbers}
        covered |= numbers
        hidden = sorted(numbers - public)
        if fact.is_rule and hidden:
            raise Incomplete(f"the rule {fact.key!r} carries the hidden value {hidden[0]:g}; give it a probe")
        for mode in ("revealed", "written") if not fact.is_rule else texts:
            if fact.statement not in texts[mode]:
                kind = "rule" if fact.is_rule else "fact"
                raise Incomplete(f"the {mode} mode does not state the {kind} {fact.key!r}")
        if fact.is_rule:
            continue
        op = operations.get(fact.probe)
        if fact.draw:
            if op is None or op.kind == "probe":
                raise Incomplete(f"the draws {fact.key!r} name {fact.probe!r}, which is not an operation that "
                                 "reveals them when their time comes (an info, decision or clock operation)")
            if fact.probe not in hidden_tools:
                raise Incomplete(f"no hidden-mode tool is bound to {fact.probe!r}, which reveals {fact.key!r}")
            continue
        if op is None or op.kind not in ("probe", "info"):
            raise Incomplete(f"the fact {fact.key!r} names {fact.probe!r}, which is not a probe or info operation")
        if fact.probe not in hidden_tools:
            raise Incomplete(f"no hidden-mode tool is bound to {fact.probe!r}, the probe of {fact.key!r}")
        revealed = observed_numbers(observations.get(op.name, []))
        unreached = sorted(numbers - revealed)
        if unreached:
            raise Incomplete(f"the fact {fact.key!r} states {unreached[0]:g}, which no call of {fact.probe!r} "
                             "reveals")
    secret = {round(float(x), 6) for x in mechanism.secret_numbers(params)} - public
    unstated = sorted(secret - covered)
    if unstated:
        raise Incomplete(f"the hidden value {unstated[0]:g} belongs to no declared fact")


def check_completeness(spec: EnvSpec, observations: dict[str, list[Any]] | None = None) -> None:
    """The check for one environment, with its family's facts in the vocabulary of its passage."""
    mechanism = mechanisms.get(spec.family)
    params = mechanism.params_from_data(spec.params)
    words = vocabulary(passage_vocabulary(spec.rendering.passage_id, spec.family))
    check_facts(spec, mechanism.facts(params, words), observations)
