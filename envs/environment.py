"""Environment: an EnvSpec and a mode, played through tools; every agent mistake is a message."""

from __future__ import annotations

import copy
import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import mechanisms
from envs.calculator import CalculatorError, evaluate
from envs.scoring import score
from mechanisms.base import ActionError
from mechanisms.prose import ledger
from schemas import payload
from schemas.envspec import DEFAULT_MODE, MODES, SUBMIT_PLAN, EnvSpec, Mode, ToolSpec
from schemas.errors import UserError
from schemas.strict_json import dumps, loads
from setter.wording import TEMPLATE_WORDS

MAX_PLAN_STEPS = 2000


@dataclass
class EpisodeResult:
    """The outcome of one played episode."""

    env_id: str
    mode: str
    agent: str
    score: float
    u: float
    turns: int
    errors: int
    trajectory: list[dict[str, Any]] = field(default_factory=list)


class Environment:
    """A stateful environment built from an EnvSpec in one presentation mode."""

    def __init__(self, spec: EnvSpec, mode: Mode = DEFAULT_MODE, env_id: str | None = None):
        """`env_id`: the spec's id when the caller has it already (hashing a whole spec takes a while)."""
        if mode not in MODES:
            raise UserError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        self.spec = spec
        self.mode = mode
        self._env_id: str | None = env_id
        self.mechanism = mechanisms.get(spec.family)
        if self.mechanism.version != spec.version:
            raise UserError(f"this {spec.family} environment was generated for version {spec.version} of the family "
                            f"and this code plays version {self.mechanism.version} (its tools or dynamics changed): "
                            "generate it again with vhd generate")
        self.params = self.mechanism.params_from_data(spec.params)
        self._tools = {tool.name: tool for tool in spec.rendering.tools}
        self._names = spec.rendering.observation_names
        self._exposed = frozenset(tool.name for tool in self.tool_specs())
        self._op_tool = {}
        for tool in spec.rendering.tools:
            self._op_tool.setdefault(tool.operation, tool)
        self.reset()

    @property
    def env_id(self) -> str:
        """A hash of the whole spec: computed once per environment, when first asked for."""
        if self._env_id is None:
            self._env_id = self.spec.env_id
        return self._env_id

    # --- episode ------------------------------------------------------------------------
    def reset(self) -> None:
        self.state = self.mechanism.initial_state(self.params)
        self.turns = 0
        self.errors = 0
        self.trajectory: list[dict[str, Any]] = []
        self._ended = False

    @property
    def done(self) -> bool:
        return self._ended or self.turns >= self.spec.turn_budget or self.mechanism.finished(self.state)

    @property
    def instructions(self) -> str:
        if self.mode == "written":
            return self.spec.rendering.written_prompt
        return self.spec.rendering.instructions[self.mode]

    def utility(self) -> float:
        return self.mechanism.utility(self.params, self.state)

    def score(self) -> float:
        ref = self.spec.reference
        return score(self.utility(), ref.u0, ref.u_star)

    def result(self, agent: str) -> EpisodeResult:
        return EpisodeResult(self.env_id, self.mode, agent, self.score(), self.utility(), self.turns,
                             self.errors, self.trajectory)

    # --- tools --------------------------------------------------------------------------
    def tool_specs(self) -> list[ToolSpec]:
        """The tools this mode exposes (written mode: a calculator and the plan tool, SUBMIT_PLAN)."""
        if self.mode == "written":
            return [t for t in self.spec.rendering.tools if t.operation == "calculator"] + [self._plan_tool()]
        return list(self.spec.rendering.tools)

    def tools(self) -> list[dict[str, Any]]:
        """The tools in OpenAI function-calling format."""
        return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                  "parameters": t.parameters}} for t in self.tool_specs()]

    @property
    def tool_names(self) -> frozenset[str]:
        """The names of the tools this mode exposes."""
        return self._exposed

    def tool_for(self, operation: str) -> ToolSpec:
        return self._op_tool[operation]

    def call(self, name: str, arguments: dict[str, Any] | str | None = None) -> str:
        """Call a tool; returns a JSON observation (strict JSON: a non-finite number is null), or {"error": ...}
        with the state unchanged."""
        return dumps(self.step(name, arguments), default=float)

    def step(self, name: str, arguments: dict[str, Any] | str | None = None) -> dict[str, Any]:
        """`call` without the JSON encoding: the observation as a dict (what scripted agents read)."""
        if self.done:
            return self._reply(name, arguments, {"error": "the episode is over; no further calls are accepted"})
        self.turns += 1
        try:
            args = _parse_arguments(arguments)
            observation = shown(self._dispatch(name, args), self._names)
        except (ActionError, CalculatorError) as error:
            self.errors += 1
            observation = {"error": in_passage_words(str(error), self._names)}
        if self.done:  # whatever ended the episode (its closing call, a plan, the last turn), it shows the result
            observation = {**observation, ENDING_KEY: self.ending()}
        return self._reply(name, arguments, observation)

    def ending(self) -> dict[str, Any]:
        """The episode's outcome as a ledger states it (the family's objective value and its parts)."""
        why = "finished" if self._ended or self.mechanism.finished(self.state) else "the turns ran out"
        ledger = self.mechanism.ledger(self.params, self.state)
        return {"episode over": why, **shown(ledger, self._names)}

    def _reply(self, name: str, arguments: Any, observation: dict[str, Any]) -> dict[str, Any]:
        self.trajectory.append({"tool": name, "arguments": arguments, "result": observation})
        return observation

    def _dispatch(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        if name not in self._exposed:
            raise ActionError(f"unknown tool {name!r}; available tools: {', '.join(sorted(self._exposed))}")
        if name == SUBMIT_PLAN:
            return self._run_plan(args)
        return self._run_tool(self._tools[name], args)

    def _run_tool(self, tool: ToolSpec, args: dict[str, Any]) -> dict[str, Any]:
        properties = tool.parameters.get("properties", {})
        if not args.keys() <= properties.keys():
            unknown = sorted(set(args) - set(properties))
            raise ActionError(f"tool {tool.name!r} has no argument {unknown[0]!r}; it takes {sorted(properties)}")
        missing = [a for a in tool.parameters.get("required", []) if a not in args]
        if missing:
            raise ActionError(f"tool {tool.name!r} is missing the required argument {missing[0]!r}")
        if tool.operation == "calculator":
            return {"result": evaluate(args.get(_first(properties, "expression")))}
        if tool.operation == "turns_left":
            return {"turns_left": self.spec.turn_budget - self.turns}
        mapping = tool.argument_map
        op_args = {mapping.get(key, key): value for key, value in args.items()} if mapping else dict(args)
        # the operation and its argument names come from the validated spec: the mechanism reads .op and .args only
        try:
            return self.mechanism.apply(self.params, self.state, OperationCall(tool.operation, op_args))
        except ActionError as error:
            if not mapping:
                raise
            raise ActionError(_in_tool_names(str(error), mapping)) from None

    def _run_plan(self, args: dict[str, Any]) -> dict[str, Any]:
        steps = args.get("steps")
        if not isinstance(steps, list) or not steps or len(steps) > MAX_PLAN_STEPS:
            raise ActionError(f"'steps' must be a non-empty list of at most {MAX_PLAN_STEPS} steps")
        allowed = {t.name: t for t in self.spec.rendering.tools if t.kind in ("decision", "clock")}
        for index, step in enumerate(steps, start=1):  # every step's tool and argument names, before any step runs
            if not isinstance(step, dict) or step.get("tool") not in allowed:
                raise ActionError(f"step {index}: 'tool' must be one of {', '.join(sorted(allowed))}")
            arguments = step.get("arguments")
            if isinstance(arguments, dict):
                takes = allowed[step["tool"]].parameters.get("properties", {})
                unknown = sorted(set(arguments) - set(takes))
                if unknown:
                    raise ActionError(f"step {index} ({step['tool']}): no argument {unknown[0]!r}; it takes "
                                      f"{sorted(takes) or 'no arguments'}")
        saved = copy.deepcopy(self.state)
        try:
            for index, step in enumerate(steps, start=1):
                if self.mechanism.finished(self.state):
                    break
                try:
                    self._run_tool(allowed[step["tool"]], _parse_arguments(step.get("arguments")))
                except ActionError as error:
                    raise ActionError(f"step {index} ({step['tool']}): {error}") from None
        except ActionError:
            self.state = saved
            raise
        self._ended = True
        return {"accepted_steps": len(steps)}

    def _plan_tool(self) -> ToolSpec:
        steps = sorted((t for t in self.spec.rendering.tools if t.kind in ("decision", "clock")), key=lambda t: t.name)
        named = ", ".join(f"{t.name}({', '.join(t.parameters.get('properties', {}))})" for t in steps)
        return ToolSpec(
            name=SUBMIT_PLAN,
            description="Submit your whole plan at once as an ordered list of steps; each step names one of "
            f"these tools and its arguments by name: {named}. The plan is executed in order and ends the "
            "episode; if a step is invalid nothing is executed and you may submit again.",
            kind="decision",
            parameters={"type": "object", "properties": {"steps": {"type": "array", "items": {
                "anyOf": [_plan_step(t) for t in steps]}}}, "required": ["steps"]},
            operation=SUBMIT_PLAN,
        )


def _plan_step(tool: ToolSpec) -> dict[str, Any]:
    """One step of a written plan: the tool's name and its own argument schema."""
    arguments = {"type": "object", "properties": tool.parameters.get("properties", {}),
                 "required": list(tool.parameters.get("required", [])), "additionalProperties": False}
    return {"type": "object", "properties": {"tool": {"type": "string", "const": tool.name}, "arguments": arguments},
            "required": ["tool", "arguments"], "additionalProperties": False}


ENDING_KEY = "outcome"


_NUMBERED = re.compile(r"^(.*\S) (\d+)$")


def shown(observation: Any, names: dict[str, str]) -> Any:
    """An observation as the agent sees it: every key the rendering names (and every string value that is such a
    key) in the passage's words; "limit 3" is shown as the name of "limit" followed by 3. Numbers are shown as a
    ledger prints them (mechanisms.prose.ledger: 10 not 10.0, 160.2 not 160.20000000000002); they stay numbers."""
    if isinstance(observation, dict):
        return {_shown_key(key, names): shown(value, names) for key, value in observation.items()}
    if isinstance(observation, list):
        if _PLAIN.issuperset(map(type, observation)):  # a row of numbers: nothing to rename
            return [ledger(value) for value in observation]
        return [shown(value, names) for value in observation]
    if isinstance(observation, str):
        return _shown_key(observation, names)
    return ledger(observation)


_PLAIN = frozenset({int, float, bool, type(None)})


def in_passage_words(message: str, names: dict[str, str]) -> str:
    """A mechanism's message in the passage's words: a template word the rendering names ("item") and a named word
    followed by a number ("limit 2") are shown as the rendering names them; other words stay as they are."""
    pattern = _word_pattern(tuple(sorted(key for key in names if " " not in key)))
    if pattern is None:
        return message
    return pattern.sub(lambda m: names[m.group(1)] if m.group(1) in TEMPLATE_WORDS or m.group(2) else m.group(0),
                       message)


@functools.lru_cache(maxsize=1024)
def _word_pattern(words: tuple[str, ...]) -> re.Pattern | None:
    if not words:
        return None
    alternatives = "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True))
    return re.compile(rf"\b({alternatives})\b(?=( \d))?")


def _shown_key(key: Any, names: dict[str, str]) -> Any:
    if not isinstance(key, str):
        return key
    if key in names:
        return names[key]
    numbered = _NUMBERED.match(key)
    if numbered and numbered.group(1) in names:
        return f"{names[numbered.group(1)]} {numbered.group(2)}"
    return key


class OperationCall(NamedTuple):
    """One operation call as the runtime hands it to a mechanism's `apply` (an Action without re-validation)."""

    op: str
    args: dict[str, Any]


def _parse_arguments(arguments: dict[str, Any] | str | None) -> dict[str, Any]:
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        try:
            arguments = loads(arguments)
        except json.JSONDecodeError as error:
            raise ActionError(f"arguments are not valid JSON: {error.msg}") from None
        except RecursionError:
            raise ActionError("arguments nest lists or objects too deeply") from None
    if not isinstance(arguments, dict):
        raise ActionError("arguments must be a JSON object")
    if payload.nesting_exceeds(arguments, MAX_NESTING):  # read (from JSON or a caller's objects) but too deep to show
        raise ActionError("arguments nest lists or objects too deeply")
    return arguments


# lists and objects within a call's arguments (a written plan's step arguments sit at depth 4): the one guard's limit
MAX_NESTING = payload.MAX_DEPTH


def _in_tool_names(message: str, mapping: dict[str, str]) -> str:
    """A mechanism's error message with its operation's argument names (quoted, whole) replaced by the tool's:
    the agent called its tool with the argument names the rendering gave it, not the operation's."""
    back = {op_name: tool_name for tool_name, op_name in mapping.items() if op_name != tool_name}
    if not back:
        return message
    names = "|".join(re.escape(name) for name in sorted(back, key=len, reverse=True))
    return re.sub(rf"(['\"])({names})\1", lambda m: f"{m.group(1)}{back[m.group(2)]}{m.group(1)}", message)


def _first(properties: dict[str, Any], default: str) -> str:
    return default if default in properties else next(iter(properties), default)
