"""Admission of a rendered environment: structure, C1 executes, C2 band, C3 oracle replay, leaks, repeats.

Every check runs through the real runtime and the rendered tools, never through a shortcut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import mechanisms
from envs.agents import play
from envs.completeness import Incomplete, bound_observations, check_completeness
from envs.difficulty import INFORMED, MIN_INFORMED_SCORE
from envs.environment import Environment
from envs.lint import LintError, lint
from schemas.envspec import MODES, RUNTIME_OPERATION_NAMES, EnvSpec

RELATIVE_TOLERANCE = 1e-6
MIN_TOOLS = 10
MAX_TEXT_CHARS = 6000
MAX_DESCRIPTION_CHARS = 600
TOOL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$")
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?!\w)(?!\.\d)")
FUZZ_CALLS = 60  # random calls per mode: enough to hit every tool with good and bad arguments


class Rejected(Exception):
    """An environment that fails one admission check; the message is the reason."""

    def __init__(self, check: str, reason: str):
        super().__init__(f"{check}: {reason}")
        self.check = check


@dataclass
class Admission:
    admitted: bool
    reason: str | None
    check: str | None
    checks: dict[str, Any] = field(default_factory=dict)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= RELATIVE_TOLERANCE * max(1.0, abs(a), abs(b))


def check_structure(spec: EnvSpec) -> None:
    """The rendering binds enough well-formed tools to operations that exist, with fitting arguments."""
    mechanism = mechanisms.get(spec.family)
    params = mechanism.params_from_data(spec.params)
    operations = {op.name: op for op in mechanism.operations(params)}
    tools = spec.rendering.tools
    if len(tools) < MIN_TOOLS:
        raise Rejected("structure", f"only {len(tools)} tools; at least {MIN_TOOLS} are required")
    names = [t.name for t in tools]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise Rejected("structure", f"duplicate tool name {duplicates[0]!r}")
    for tool in tools:
        if not TOOL_NAME.match(tool.name):
            raise Rejected("structure", f"invalid tool name {tool.name!r}: use letters, digits, _ or -, at most 64")
        if len(tool.description) > MAX_DESCRIPTION_CHARS:
            raise Rejected("structure", f"description of {tool.name!r} is longer than {MAX_DESCRIPTION_CHARS}")
        if tool.operation in RUNTIME_OPERATION_NAMES:
            continue
        op = operations.get(tool.operation)
        if op is None:
            raise Rejected("structure", f"tool {tool.name!r} is bound to unknown operation {tool.operation!r}")
        if tool.kind != op.kind:
            raise Rejected("structure", f"tool {tool.name!r} is a {tool.kind} but {op.name!r} is a {op.kind}")
        properties = tool.parameters.get("properties", {})
        bound = {tool.argument_map.get(a, a) for a in properties}
        if bound != set(op.args):
            raise Rejected("structure", f"arguments of {tool.name!r} map to {sorted(bound)}, "
                           f"operation {op.name!r} takes {sorted(op.args)}")
    bound_ops = {t.operation for t in tools}
    needed = [op.name for op in operations.values() if op.kind in ("decision", "clock")]
    unbound = [name for name in needed if name not in bound_ops]
    if unbound:
        raise Rejected("structure", f"no tool is bound to the operation {unbound[0]!r}")
    for kind in ("probe", "decision", "clock", "info"):
        if not any(t.kind == kind for t in tools):
            raise Rejected("structure", f"no {kind} tool")
    if not any(operations[o].decoy for o in bound_ops if o in operations):
        raise Rejected("structure", "no decoy sticker tool")
    texts = [*spec.rendering.instructions.values(), spec.rendering.written_prompt]
    if set(spec.rendering.instructions) != set(MODES):
        raise Rejected("structure", f"instructions must cover the modes {', '.join(MODES)}")
    if any(len(text) > MAX_TEXT_CHARS for text in texts):
        raise Rejected("structure", f"an instruction text is longer than {MAX_TEXT_CHARS} characters")


def hidden_leaks(spec: EnvSpec) -> list[str]:
    """Numbers of hidden parameters or the solution that appear in hidden-mode text."""
    mechanism = mechanisms.get(spec.family)
    params = mechanism.params_from_data(spec.params)
    public = {round(float(x), 6) for x in mechanism.public_numbers(params)} | {float(spec.turn_budget)}
    secret = {round(float(x), 6) for x in mechanism.secret_numbers(params)}
    secret |= {round(spec.reference.u_star, 6), round(spec.reference.u0, 6)}
    for action in spec.reference.optimal_actions:
        secret |= {round(float(v), 6) for v in action.args.values() if isinstance(v, (int, float))}
    secret -= public
    text = " ".join([spec.rendering.instructions["hidden"]]
                    + [f"{t.name} {t.description} {t.parameters}" for t in spec.rendering.tools])
    return sorted({m for m in NUMBER.findall(text) if round(float(m), 6) in secret})


def admit(spec: EnvSpec) -> Admission:
    """Run every check; the first failure is the reason."""
    checks: dict[str, Any] = {}
    try:
        check_structure(spec)
        checks["structure"] = "ok"
        observations = bound_observations(spec)
        try:
            check_completeness(spec, observations)
        except Incomplete as gap:
            raise Rejected("completeness", str(gap)) from None
        checks["completeness"] = "ok"
        _check_band(spec, checks)
        hidden_plays = _check_play(spec, checks)
        hidden_plays.append(_check_ceiling(spec, checks))
        try:
            lint(spec, observations, hidden_plays)
        except LintError as defect:
            raise Rejected("prose", str(defect)) from None
        checks["prose"] = "ok"
        leaks = hidden_leaks(spec)
        if leaks:
            raise Rejected("leak", f"hidden mode shows parameter or solution values {leaks[:5]}")
        checks["leak"] = "ok"
    except Rejected as rejection:
        return Admission(False, str(rejection), rejection.check, checks)
    except Exception as error:  # C1: any crash of the dynamics or the spec is a rejection, not a failure
        return Admission(False, f"C1: {type(error).__name__}: {error}"[:500], "C1", checks)
    return Admission(True, None, None, checks)


def _check_play(spec: EnvSpec, checks: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Every baseline through the rendered tools of every mode. Modes that expose the same tools behave the same
    (the mode only changes the instructions), so such a mode takes the verdicts of the first one; determinism is a
    property of the dynamics, checked by one repeated replay. Returns the trajectories of the oracle and the default
    with the hidden mode's tools (what the prose lint reads)."""
    ref = spec.reference
    played: dict[tuple, dict[str, Any]] = {}
    trajectories: dict[tuple, list[list[dict[str, Any]]]] = {}
    hidden: list[list[dict[str, Any]]] = []
    for mode in MODES:
        env = Environment(spec, mode)
        interface = tuple(tool.model_dump_json() for tool in env.tool_specs())
        if interface in played:
            checks[mode] = dict(played[interface])
            if mode == "hidden":
                hidden = trajectories[interface]
            continue
        oracle = play(env, "oracle")
        if oracle.errors:
            raise Rejected("C3", f"oracle made {oracle.errors} invalid calls in {mode} mode: "
                           f"{_first_error(oracle.trajectory)}")
        if not _close(oracle.u, ref.u_star):
            raise Rejected("C3", f"oracle reached {oracle.u:.6g} in {mode} mode, u* is {ref.u_star:.6g}")
        if not played:
            repeat = play(env, "oracle")
            if repeat.trajectory != oracle.trajectory or repeat.u != oracle.u:
                raise Rejected("repeat", f"two oracle replays differ in {mode} mode")
        baseline = play(env, "default")
        if not _close(baseline.u, ref.u0) or baseline.score != 0.0:
            raise Rejected("C1", f"default policy reached {baseline.u:.6g} in {mode} mode, u0 is {ref.u0:.6g}")
        idle = play(env, "idle")
        fuzz = play(env, "random", seed=len(spec.rendering.tools), max_calls=FUZZ_CALLS)
        for result in (baseline, idle, fuzz):
            if result.u > ref.u_star + RELATIVE_TOLERANCE * max(1.0, abs(ref.u_star)):
                raise Rejected("C3", f"{result.agent} beat u* in {mode} mode: {result.u:.6g} > {ref.u_star:.6g}")
        checks[mode] = played[interface] = {"oracle": oracle.score, "default": baseline.score, "idle": idle.score,
                                            "random": fuzz.score, "oracle_turns": oracle.turns}
        trajectories[interface] = [oracle.trajectory, baseline.trajectory]
        if mode == "hidden":
            hidden = trajectories[interface]
    checks["C1"] = checks["C3"] = checks["repeat"] = "ok"
    return list(hidden)


def _check_ceiling(spec: EnvSpec, checks: dict[str, Any]) -> list[dict[str, Any]]:
    """The informed agent's recorded play, replayed through the hidden mode's tools, reaches what was recorded and
    beats the default (else the budget, not skill, decides the score); a requested tier is the measured one."""
    difficulty = spec.difficulty
    if difficulty is None:
        raise Rejected("ceiling", "the environment records no difficulty measures")
    result = play(Environment(spec, "hidden"), INFORMED)
    recorded = spec.reference.baselines.get(INFORMED)
    if recorded is None or not _close(result.u, recorded):
        raise Rejected("ceiling", f"the informed agent reached {result.u:.6g} through the tools, {recorded} was "
                       "recorded")
    if difficulty.informed_score < MIN_INFORMED_SCORE:
        raise Rejected("ceiling", f"the informed agent scores {difficulty.informed_score:.3f} within the budget: "
                       "the budget, not skill, decides the score")
    checks["ceiling"] = round(difficulty.informed_score, 6)
    if difficulty.requested is not None and difficulty.requested != difficulty.tier:
        raise Rejected("difficulty", f"measured {difficulty.tier}, the plan asked for {difficulty.requested}")
    checks["difficulty"] = difficulty.tier
    return result.trajectory


def _check_band(spec: EnvSpec, checks: dict[str, Any]) -> None:
    """C2: the default policy is neither already optimal nor hopeless."""
    ref = spec.reference
    mechanism = mechanisms.get(spec.family)
    low, high = mechanism.u0_band
    gap = ref.u_star - ref.u_idle
    if ref.u_star - ref.u0 <= RELATIVE_TOLERANCE * max(1.0, abs(ref.u_star)):
        raise Rejected("C2", "the default policy is already optimal (no gap to learn)")
    if gap <= RELATIVE_TOLERANCE * max(1.0, abs(ref.u_star)):
        raise Rejected("C2", "doing nothing is already optimal")
    position = (ref.u0 - ref.u_idle) / gap
    checks["C2"] = round(position, 6)
    if not low <= position <= high:
        raise Rejected("C2", f"default position {position:.3f} is outside the band [{low}, {high}]")


def _first_error(trajectory: list[dict[str, Any]]) -> str:
    for step in trajectory:
        if "error" in step["result"]:
            return f"{step['tool']}: {step['result']['error']}"
    return ""
