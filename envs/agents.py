"""Baseline agents that play through the same tool interface as an LLM agent."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from envs.environment import SUBMIT_PLAN, Environment, EpisodeResult
from mechanisms.base import ActionError
from schemas.envspec import Action
from schemas.errors import UserError

ToolCall = tuple[str, dict[str, Any]]


def tool_call(env: Environment, action: Action) -> ToolCall:
    """Translate a mechanism action into the rendered tool bound to it."""
    tool = env.tool_for(action.op)
    reverse = {op_arg: tool_arg for tool_arg, op_arg in tool.argument_map.items()}
    return tool.name, {reverse.get(key, key): value for key, value in action.args.items()}


def _script(env: Environment, actions: list[Action]) -> Iterator[ToolCall]:
    if env.mode == "written":
        steps = [tool_call(env, a) for a in _accepted_decisions(env, actions)]
        yield SUBMIT_PLAN, {"steps": [{"tool": name, "arguments": args} for name, args in steps]}
        return
    yield from _translated(env, actions)


def _accepted_decisions(env: Environment, actions: list[Action]) -> list[Action]:
    """The decision and clock calls of a played script that the dynamics accepted (a written plan is refused whole
    when one step is: a player's refused call is left out of its plan, as it changed nothing)."""
    mechanism, params = env.mechanism, env.params
    state = mechanism.initial_state(params)
    accepted = []
    for action in actions:
        if mechanism.finished(state):
            break
        try:
            mechanism.apply(params, state, action)
        except ActionError:
            continue
        if env.tool_for(action.op).kind in ("decision", "clock"):
            accepted.append(action)
    return accepted


def _translated(env: Environment, actions: list[Action]) -> list[ToolCall]:
    """The actions as tool calls of this environment, translated once per list (a reference plan is replayed often)."""
    cache = env.__dict__.setdefault("_translated_scripts", {})
    key = id(actions)
    if key not in cache:
        cache[key] = (actions, [tool_call(env, action) for action in actions])  # holding `actions` keeps the id
    return cache[key][1]


def oracle(env: Environment, seed: int = 0) -> Iterator[ToolCall]:
    """Replays the solver's optimal actions through the rendered tools."""
    return _script(env, env.spec.reference.optimal_actions)


def default(env: Environment, seed: int = 0) -> Iterator[ToolCall]:
    """The default policy: trusts the stickers, splits budgets evenly, never probes."""
    return _script(env, env.spec.reference.default_actions)


def informed(env: Environment, seed: int = 0) -> Iterator[ToolCall]:
    """The informed agent (envs.difficulty): probes by value of information within the budget, then the plan
    solved on what it learned and the stickers; hidden mode's reachable ceiling."""
    return _script(env, env.spec.reference.informed_actions)


def naive(env: Environment, seed: int = 0) -> Iterator[ToolCall]:
    """The naive prober (envs.difficulty): verifies figures in listing order within the budget, then the plan solved
    on what it learned and the posted figures."""
    return _script(env, env.spec.reference.naive_actions)


def idle(env: Environment, seed: int = 0) -> Iterator[ToolCall]:
    """Does nothing and ends the episode."""
    return _script(env, env.mechanism.idle_actions(env.params))


def random_agent(env: Environment, seed: int = 0) -> Iterator[ToolCall]:
    """Calls random tools with random (often invalid) arguments until the episode ends."""
    rng = np.random.default_rng(seed)
    specs = env.tool_specs()
    while True:
        tool = specs[int(rng.integers(len(specs)))]
        yield tool.name, random_arguments(tool.parameters, rng)


def random_arguments(schema: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """Arguments that usually fit the schema and sometimes do not (missing, wrong type, out of range)."""
    args: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        roll = rng.random()
        if roll < 0.05:
            continue
        if roll < 0.1:
            args[name] = "not-a-number"
            continue
        low, high = prop.get("minimum", -5), prop.get("maximum", 50)
        if prop.get("type") == "integer":
            args[name] = int(rng.integers(int(low) - 1, int(high) + 2))
        elif prop.get("type") == "number":
            args[name] = float(rng.uniform(low - 1, high + 1))
        elif prop.get("type") == "array":
            args[name] = [{"tool": "nothing"}] if rng.random() < 0.5 else []
        else:
            args[name] = str(rng.integers(100))
    if rng.random() < 0.05:
        args["unexpected"] = 1
    return args


AGENTS = {"oracle": oracle, "default": default, "informed": informed, "naive": naive, "idle": idle,
          "random": random_agent}


def make_agent(name: str):
    try:
        return AGENTS[name]
    except KeyError:
        raise UserError(f"unknown agent {name!r}; choose one of {', '.join(AGENTS)}") from None


def play(env: Environment, agent: str = "oracle", seed: int = 0, max_calls: int | None = None) -> EpisodeResult:
    """Play one episode from a fresh state and return its result (at most `max_calls` tool calls if given)."""
    env.reset()
    for calls, (name, args) in enumerate(make_agent(agent)(env, seed)):
        if env.done or (max_calls is not None and calls >= max_calls):
            break
        env.step(name, args)
    return env.result(agent)
