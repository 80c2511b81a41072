"""One checker for an environment and for a family.

- :func:`check_environment` is what admission runs on every rendered environment (``envs.admission.admit``): the
  structure of the tools, the completeness of the facts (``envs.completeness``), the default's band, every baseline
  played through the rendered tools of every mode, the informed agent's ceiling, the prose lint (``envs.lint``) and
  the leak check. The first failure is the verdict's reason.
- :func:`check_family` is what the conformance suite runs over every registered family
  (``tests/mechanisms/test_conformance.py``): sampling determinism, the solver against an independent method, the
  exact replay of the optimal actions, u* above the default, idle and baselines, random calls that raise only
  ``ActionError`` and leave the state unchanged when refused, the operations' schema, the phrase file, and the
  environment checks over sampled instances of every cell and tier. It returns every problem it finds.

Every check runs through the real runtime and the rendered tools, never through a shortcut.
"""

from __future__ import annotations

import copy
import inspect
import json
import re
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, get_args

import numpy as np

import mechanisms
from envs.agents import play, random_agent, random_arguments, tool_call
from envs.completeness import Incomplete, bound_observations, check_completeness, observed_numbers
from envs.difficulty import INFORMED, MIN_INFORMED_SCORE, NAIVE_PROBER, measure
from envs.environment import ENDING_KEY, Environment
from envs.lint import LintError, lint
from mechanisms.base import ActionError, Mechanism, ParamsError, parsed_once, remembered_solutions
from mechanisms.players import run_policy
from schemas.envspec import MODES, RUNTIME_OPERATION_NAMES, Action, EnvSpec, ToolKind
from setter.corpus import Passage
from setter.phrasebook import family_phrases
from setter.spec import build_spec, turn_budget
from setter.template import TemplateSetter, render
from setter.tools import argument_schema

RELATIVE_TOLERANCE = 1e-6
MIN_TOOLS = 10
MAX_TEXT_CHARS = 6000
MAX_DESCRIPTION_CHARS = 600
TOOL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$")
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?!\w)(?!\.\d)")
FUZZ_CALLS = 60  # random calls per mode: enough to hit every tool with good and bad arguments

ENDING = "ending"  # every ending states the outcome
# the admission check of a crash anywhere in the dynamics or the spec (the paper's C1: "it executes"), and the one of
# the default policy's replay through the tools (it must reach u0 and score 0)
EXECUTES = "executes"
DEFAULT_REPLAY = "default_replay"


@dataclass(frozen=True)
class Problem:
    """One failed check: its name and what is wrong, in one line."""

    check: str
    message: str

    def __str__(self) -> str:
        return f"{self.check}: {self.message}"


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
    env_id: str | None = None  # the environment's id, when admitted

    @property
    def problems(self) -> list[Problem]:
        """The failed check as a problem (none when admitted)."""
        if self.admitted or self.check is None:
            return []
        return [Problem(self.check, (self.reason or "").removeprefix(f"{self.check}: "))]


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= RELATIVE_TOLERANCE * max(1.0, abs(a), abs(b))


# --- one environment (admission) ---------------------------------------------------------------------------------
def check_environment(spec: EnvSpec) -> Admission:
    """Run every check of one rendered environment; the first failure is the reason."""
    with parsed_once():  # the checks read the spec's parameters and operations in many places
        return _check_environment(spec)


def _check_environment(spec: EnvSpec) -> Admission:
    checks: dict[str, Any] = {}
    try:
        env_id = spec.env_id  # computed once: every play's result carries it
        check_structure(spec)
        checks["structure"] = "ok"
        observations = bound_observations(spec)
        try:
            check_completeness(spec, observations)
        except Incomplete as gap:
            raise Rejected("completeness", str(gap)) from None
        checks["completeness"] = "ok"
        _check_band(spec, checks)
        hidden_plays = _check_play(spec, checks, env_id)
        hidden_plays.extend(_check_ceiling(spec, checks, env_id))
        leaked = decision_leaks(spec, hidden_plays)
        if leaked:
            raise Rejected("decision_leak", leaked)
        checks["decision_leak"] = "ok"
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
    except Exception as error:  # any crash of the dynamics or the spec is a rejection, not a failure
        return Admission(False, f"{EXECUTES}: {type(error).__name__}: {error}"[:500], EXECUTES, checks)
    checks[EXECUTES] = "ok"
    return Admission(True, None, None, checks, env_id)


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
    text = " ".join([spec.rendering.instructions["hidden"], json.dumps(mechanism.public_view(params))]
                    + [f"{t.name} {t.description} {t.parameters}" for t in spec.rendering.tools])
    return sorted({m for m in NUMBER.findall(text) if round(float(m), 6) in secret})


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


def _check_play(spec: EnvSpec, checks: dict[str, Any], env_id: str | None = None) -> list[list[dict[str, Any]]]:
    """Every baseline through the rendered tools of every mode: C3 (the oracle reproduces u* and nothing beats it) and
    the default's replay (it reaches u0 and scores 0). Modes that expose the same tools behave the same (the mode
    only changes the instructions), so such a mode takes the verdicts of the first one; determinism is a property of
    the dynamics, checked by one repeated replay. Returns the trajectories of the oracle and the default with the
    hidden mode's tools (what the prose lint reads)."""
    ref = spec.reference
    played: dict[tuple, dict[str, Any]] = {}
    trajectories: dict[tuple, list[list[dict[str, Any]]]] = {}
    hidden: list[list[dict[str, Any]]] = []
    for mode in MODES:
        env = Environment(spec, mode, env_id)
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
            raise Rejected(DEFAULT_REPLAY, f"default policy reached {baseline.u:.6g} in {mode} mode, u0 is "
                           f"{ref.u0:.6g}")
        idle = play(env, "idle")
        for result in (oracle, baseline, idle):
            missing = ending_problem(env, result)
            if missing:
                raise Rejected(ENDING, f"{result.agent} in {mode} mode: {missing}")
        fuzz = play(env, "random", seed=len(spec.rendering.tools), max_calls=FUZZ_CALLS)
        for result in (baseline, idle, fuzz):
            if result.u > ref.u_star + RELATIVE_TOLERANCE * max(1.0, abs(ref.u_star)):
                raise Rejected("C3", f"{result.agent} beat u* in {mode} mode: {result.u:.6g} > {ref.u_star:.6g}")
        checks[mode] = played[interface] = {"oracle": oracle.score, "default": baseline.score, "idle": idle.score,
                                            "random": fuzz.score, "oracle_turns": oracle.turns}
        trajectories[interface] = [oracle.trajectory, baseline.trajectory]
        if mode == "hidden":
            hidden = trajectories[interface]
    checks[DEFAULT_REPLAY] = checks["C3"] = checks["repeat"] = checks[ENDING] = "ok"
    return list(hidden)


def ending_problem(env: Environment, result) -> str | None:
    """Why a played episode's last observation does not state its outcome (None when it does): whatever ended it,
    the last observation carries the ledger, and its result is the utility reached."""
    if not env.done:
        return None
    if not result.trajectory:
        return "the episode ended without a call"
    last = result.trajectory[-1]["result"]
    ledger = last.get(ENDING_KEY) if isinstance(last, dict) else None
    if not isinstance(ledger, dict):
        return f"the last observation ({result.trajectory[-1]['tool']}) does not state the outcome"
    return None


def decision_leaks(spec: EnvSpec, trajectories: list[list[dict[str, Any]]]) -> str | None:
    """A decision's observation that shows a hidden figure the agent had not seen (None when there is none): a
    decision states what the agent did; the outcome comes with the step that realises it (a clock call, or the
    ending). A hidden figure is a parameter's number, or the result the decision changed (the utility as it now
    stands, or its change: a trial plan's profit reveals margins by differencing). Numbers the agent typed, public
    numbers and figures it saw earlier are not leaks. Each trajectory is replayed through the hidden tools to know
    the result after every step."""
    mechanism = mechanisms.get(spec.family)
    params = mechanism.params_from_data(spec.params)
    public = {round(float(x), 6) for x in mechanism.public_numbers(params)} | {float(spec.turn_budget)}
    secret = {round(float(x), 6) for x in mechanism.secret_numbers(params)} - public
    kinds = {tool.name: tool.kind for tool in spec.rendering.tools}
    for trajectory in trajectories:
        env = Environment(spec, "hidden")
        seen: set[float] = set()
        for step in trajectory:
            result = step["result"]
            decided = kinds.get(step["tool"]) == "decision" and isinstance(result, dict) and "error" not in result
            before = env.utility() if decided else 0.0  # the result is read around decisions only (it may be costly)
            env.step(step["tool"], step["arguments"])
            if not isinstance(result, dict):
                continue
            typed = observed_numbers(step["arguments"]) if isinstance(step["arguments"], (dict, list)) else set()
            shown_now = observed_numbers({k: v for k, v in result.items() if k != ENDING_KEY})
            if decided:
                after, hidden = env.utility(), set(secret)
                if not _close(after, before):
                    hidden |= {round(after, 6), round(after - before, 6)} - {0.0}
                leaked = sorted((shown_now & hidden) - seen - typed - public)
                if leaked:
                    return f"{step['tool']} shows the hidden figure(s) {leaked[:3]} before any call revealed them"
            seen |= shown_now | typed
    return None


def _check_ceiling(spec: EnvSpec, checks: dict[str, Any], env_id: str | None = None) -> list[list[dict[str, Any]]]:
    """The informed agent's and the naive prober's recorded plays, replayed through the hidden mode's tools, reach
    what was recorded; the informed agent beats the default (else the budget, not skill, decides the score); a
    requested tier is the measured one (hard and frontier need a skill gap: envs.difficulty.tier_of)."""
    difficulty = spec.difficulty
    if difficulty is None:
        raise Rejected("ceiling", "the environment records no difficulty measures")
    played = []
    for agent, name in (("informed", INFORMED), ("naive", NAIVE_PROBER)):
        env = Environment(spec, "hidden", env_id)
        result = play(env, agent)
        recorded = spec.reference.baselines.get(name)
        if recorded is None or not _close(result.u, recorded):
            raise Rejected("ceiling", f"the {name.replace('_', ' ')} reached {result.u:.6g} through the tools, "
                           f"{recorded} was recorded")
        missing = ending_problem(env, result)
        if missing:
            raise Rejected(ENDING, f"{name} in hidden mode: {missing}")
        played.append(result.trajectory)
    if difficulty.informed_score < MIN_INFORMED_SCORE:
        raise Rejected("ceiling", f"the informed agent scores {difficulty.informed_score:.3f} within the budget: "
                       "the budget, not skill, decides the score")
    checks["ceiling"] = round(difficulty.informed_score, 6)
    checks["skill_gap"] = difficulty.skill_gap
    if difficulty.requested is not None and difficulty.requested != difficulty.tier:
        raise Rejected("difficulty", f"measured {difficulty.tier}, the plan asked for {difficulty.requested}")
    checks["difficulty"] = difficulty.tier
    return played


def _first_error(trajectory: list[dict[str, Any]]) -> str:
    for step in trajectory:
        if "error" in step["result"]:
            return f"{step['tool']}: {step['result']['error']}"
    return ""


def sample_spec(family: str, index: int, size: int | None = None, horizon: int | None = None, attempt: int = 1,
                tier: str | None = None) -> EnvSpec:
    """One environment as the render stage builds it (the template setter, with its difficulty measures); with
    `tier`, drawn from that tier's first cell (unless size and horizon are given) with that tier's turn budget."""
    m = mechanisms.get(family)
    share = 1.0
    if tier is not None:
        cell = m.tiers()[tier]
        share = cell.probe_share
        size, horizon = size or cell.grid[0][0], horizon or cell.grid[0][1]
    size = size or m.default_size
    horizon = horizon or m.default_horizon
    seed = [99, index]
    params = m.sample(np.random.default_rng(seed), size, horizon)
    outcome = m.outcome(params)
    budget = turn_budget(m, params, outcome, share)
    rendering, _ = TemplateSetter().render(m, params, outcome, f"test/{family}/{index}", attempt, budget)
    measured = measure(m, params, outcome, budget, share, tier)
    return build_spec(m, params, outcome, rendering, split="train", size=size, horizon=horizon, seed=seed,
                      setter="template", model=None, budget=budget, measured=measured)


def render_in(family: str, passage: Passage, index: int = 0) -> EnvSpec:
    """One environment of `family` at its default size, told in the words of `passage` (the template setter, no
    difficulty measures): what the prose audit and the every-domain lint test read."""
    m = mechanisms.get(family)
    seed = [7, index]
    params = m.sample(np.random.default_rng(seed), m.default_size, m.default_horizon)
    outcome = m.outcome(params)
    budget = turn_budget(m, params, outcome)
    rendering = render(m, params, passage, budget)
    return build_spec(m, params, outcome, rendering, split="train", size=m.default_size, horizon=m.default_horizon,
                      seed=seed, setter="template", model=None, budget=budget)


# --- one family (the conformance suite) --------------------------------------------------------------------------
class IndependentReference(Protocol):
    """A second way to compute u* on small instances (tests/mechanisms/references/<family>.py): brute force, another
    solver or a closed form, written without the family's solver."""

    SMALL_KNOBS: tuple[int, int]

    def reference(self, mechanism: Mechanism, params: Any) -> float: ...


FamilyCheck = Callable[[Mechanism, "IndependentReference | None"], Iterator[str]]
FAMILY_CHECKS: dict[str, FamilyCheck] = {}


def family_check(name: str) -> Callable[[FamilyCheck], FamilyCheck]:
    def add(check: FamilyCheck) -> FamilyCheck:
        FAMILY_CHECKS[name] = check
        return check

    return add


def check_family(mechanism: Mechanism, independent: IndependentReference | None = None,
                 checks: Iterable[str] | None = None) -> list[Problem]:
    """Every problem the family checks find (or those of `checks`, names of FAMILY_CHECKS); [] when it conforms.

    The family must be registered (environments are built through the registry); `independent` is its independent
    reference (the `optimal` check reports its absence). A check that crashes reports the crash as its problem."""
    names = list(FAMILY_CHECKS) if checks is None else list(checks)
    unknown = [name for name in names if name not in FAMILY_CHECKS]
    if unknown:
        raise ValueError(f"unknown family check {unknown[0]!r}; the checks are {', '.join(FAMILY_CHECKS)}")
    try:
        registered = mechanisms.get(mechanism.id)
    except mechanisms.UnknownFamilyError:
        registered = None
    if registered is not mechanism:
        return [Problem("registered", f"{mechanism.id} is not the registered family of that id: call "
                                      "mechanisms.registry.register(...) at the end of its module and import it")]
    problems = []
    for name in names:
        try:
            with remembered_solutions():
                problems.extend(Problem(name, message) for message in FAMILY_CHECKS[name](mechanism, independent))
        except Exception as error:  # noqa: BLE001 - a crash is the check's problem, with where it happened
            where = traceback.extract_tb(error.__traceback__)[-1]
            problems.append(Problem(name, f"raised {type(error).__name__}: {error} (at {where.filename}:"
                                          f"{where.lineno})"[:500]))
    return problems


def _sample(m: Mechanism, seed: list[int], size: int | None = None, horizon: int | None = None):
    return m.sample(np.random.default_rng(seed), size or m.default_size, horizon or m.default_horizon)


def _near(a: float, b: float, rel: float, absolute: float) -> bool:
    """pytest.approx's test: |a - b| within the larger of rel * |b| and the absolute tolerance."""
    return abs(a - b) <= max(rel * abs(b), absolute)


def _above(u: float, u_star: float, rel: float) -> bool:
    return u > u_star + rel * max(1.0, abs(u_star))


@family_check("deterministic_sampling")
def _deterministic_sampling(m: Mechanism, independent: IndependentReference | None) -> Iterator[str]:
    """The same seed gives the same instance; another seed another one."""
    for i in range(5):
        if _sample(m, [11, i]) != _sample(m, [11, i]):
            yield f"two draws with the seed [11, {i}] differ"
    if _sample(m, [12, 0]) == _sample(m, [11, 0]):
        yield "the seeds [11, 0] and [12, 0] draw the same instance"


@family_check("optimal")
def _optimal(m: Mechanism, independent: IndependentReference | None) -> Iterator[str]:
    """u* equals an independent method's optimum on small instances, and the optimal actions replay to it."""
    if independent is None:
        yield (f"no independent reference: write one as tests/mechanisms/references/{m.id}.py (SMALL_KNOBS and "
               "reference(mechanism, params))")
        return
    size, horizon = independent.SMALL_KNOBS
    for i in range(12):
        params = _sample(m, [21, i], size, horizon)
        solution = m.solve(params)
        expected = independent.reference(m, params)
        if not _near(solution.u_star, expected, 1e-6, 1e-6):
            yield f"instance {i} at {size}x{horizon}: u* is {solution.u_star:.9g}, the independent method finds " \
                  f"{expected:.9g}"
        replayed = m.run(params, solution.optimal_actions)
        if not _near(replayed, solution.u_star, 1e-9, 1e-9):
            yield f"instance {i} at {size}x{horizon}: the optimal actions replay to {replayed:.12g}, u* is " \
                  f"{solution.u_star:.12g}"


@family_check("reference_bounds")
def _reference_bounds(m: Mechanism, independent: IndependentReference | None) -> Iterator[str]:
    """u* (the optimum, or the hindsight ceiling) is reached exactly by its actions and bounds the default, idle and
    recorded baselines and random play through the tools."""
    for i in range(10):
        params = _sample(m, [51, i])
        o = m.outcome(params)
        u_star = o.solution.u_star
        replayed = m.run(params, o.solution.optimal_actions)
        if not _near(replayed, u_star, 1e-9, 1e-9):
            yield f"instance {i}: the optimal actions replay to {replayed:.12g}, u* is {u_star:.12g}"
        for name, u in {"default": o.u0, "idle": o.u_idle, **o.baselines}.items():
            if _above(u, u_star, 1e-9):
                yield f"the {name} policy beats u* on instance {i}: {u:.9g} > {u_star:.9g}"
    spec = sample_spec(m.id, 1)
    u_star = spec.reference.u_star
    for seed in range(20):
        result = play(Environment(spec, "hidden"), "random", seed=seed)
        if _above(result.u, u_star, 1e-9):
            yield f"random play (seed {seed}) beats u* through the tools: {result.u:.9g} > {u_star:.9g}"


@family_check("anchors")
def _anchors(m: Mechanism, independent: IndependentReference | None) -> Iterator[str]:
    """Most sampled environments are admitted, and in every mode of each the oracle scores 1, the default 0."""
    admitted = 0
    for i in range(8):
        spec = sample_spec(m.id, i)
        if not check_environment(spec).admitted:
            continue
        admitted += 1
        for mode in MODES:
            env = Environment(spec, mode)
            scores = {agent: play(env, agent).score for agent in ("oracle", "default", "idle")}
            if not _near(scores["oracle"], 1.0, 0.0, 1e-9):
                yield f"instance {i}: the oracle scores {scores['oracle']:.9g} in {mode} mode, not 1"
            if scores["default"] != 0.0:
                yield f"instance {i}: the default scores {scores['default']:.9g} in {mode} mode, not 0"
            if scores["idle"] > 1.0:
                yield f"instance {i}: the idle agent scores {scores['idle']:.9g} in {mode} mode, above 1"
    if admitted < 5:
        yield f"only {admitted} of 8 sampled environments are admitted; at least 5 must be"


@family_check("band")
def _band(m: Mechanism, independent: IndependentReference | None) -> Iterator[str]:
    """The default policy's position lies inside the family's band on most sampled instances."""
    low, high = m.u0_band
    inside = 0
    for i in range(60):
        o = m.outcome(_sample(m, [31, i]))
        u_star = o.solution.u_star
        if o.u0 > u_star + 1e-9 or o.u_idle > u_star + 1e-9:
            yield f"instance {i}: the default ({o.u0:.9g}) or idle ({o.u_idle:.9g}) policy beats u* ({u_star:.9g})"
        gap = u_star - o.u_idle
        inside += gap > 0 and low <= (o.u0 - o.u_idle) / gap <= high and o.u0 < u_star
    if inside < 0.85 * 60:
        yield f"the default's position is inside the band [{low}, {high}] on {inside} of 60 instances; at least 51 " \
              "must be"


@family_check("tool_fuzz")
def _tool_fuzz(m: Mechanism, independent: IndependentReference | None) -> Iterator[str]:
    """A thousand random tool calls per mode never raise; a refused call leaves the state as it was; nothing random
    play reaches beats u*."""
    spec = sample_spec(m.id, 0)
    u_star = spec.reference.u_star
    rng = np.random.default_rng(5)
    for mode in MODES:
        env = Environment(spec, mode)
        calls = 0
        while calls < 1000:
            env.reset()
            for name, args in random_agent(env, int(rng.integers(1 << 30))):
                if env.done or calls >= 1000:
                    break
                before = copy.deepcopy(env.state)
                try:
                    reply = env.call(name, args)
                except Exception as error:  # noqa: BLE001 - any exception is the problem reported
                    yield f"{mode} mode: {name}({args}) raised {type(error).__name__}: {error}"[:300]
                    return
                calls += 1
                if '"error"' in reply[:10] and env.state != before:
                    yield f"{mode} mode: {name}({args}) was refused and changed the state"[:300]
                    return
            if _above(env.utility(), u_star, 1e-6):
                yield f"{mode} mode: random play reached {env.utility():.9g}, above u* {u_star:.9g}"


@family_check("refusals")
def _refusals(m: Mechanism, independent: IndependentReference | None) -> Iterator[str]:
    """Invalid arguments, unknown operations and random actions on the operations themselves raise ActionError only,
    before the state changes."""
    params = _sample(m, [41, 0])
    state = m.initial_state(params)
    before = copy.deepcopy(state)
    bad_calls = [Action(op="no_such_operation")]
    for op in m.operations(params):
        if op.args:
            bad_calls += [Action(op=op.name, args={name: "x" for name in op.args}),
                          Action(op=op.name, args={name: 10**9 for name in op.args})]
    for action in bad_calls:
        try:
            m.apply(params, state, action)
        except ActionError:
            pass
        except Exception as error:  # noqa: BLE001 - the problem reported
            yield f"{action.op}({action.args}) raised {type(error).__name__}, not ActionError: {error}"[:300]
        else:
            yield f"{action.op}({action.args}) was accepted; it must raise ActionError"
        if state != before:
            yield f"{action.op}({action.args}) was refused and changed the state"
            return
    yield from _action_fuzz(m, params)


def _action_fuzz(m: Mechanism, params, calls: int = 600) -> Iterator[str]:
    """Random actions on the operations (arguments that often fit their schema, sometimes not): each is applied or
    raises ActionError with the state as it was."""
    rng = np.random.default_rng(7)
    operations = m.operations(params)
    schemas = {op.name: {"properties": {name: argument_schema(arg) for name, arg in op.args.items()}}
               for op in operations}
    state = m.initial_state(params)
    for _ in range(calls):
        if m.finished(state):
            state = m.initial_state(params)
        op = operations[int(rng.integers(len(operations)))]
        action = Action.model_construct(op=op.name, args=random_arguments(schemas[op.name], rng))
        before = copy.deepcopy(state)
        try:
            m.apply(params, state, action)
        except ActionError:
            if state != before:
                yield f"{op.name}({action.args}) was refused and changed the state"[:300]
                return
        except Exception as error:  # noqa: BLE001 - the problem reported
            yield f"{op.name}({action.args}) raised {type(error).__name__}, not ActionError: {error}"[:300]
            return


def calls_to_probe_everything(m: Mechanism, params) -> int:
    """One call per probe operation and argument value (a probe with an integer argument per index)."""
    total = 0
    for op in m.operations(params):
        if op.kind != "probe":
            continue
        calls = 1
        for arg in op.args.values():
            if arg.type == "integer" and arg.minimum is not None and arg.maximum is not None:
                calls *= int(arg.maximum) - int(arg.minimum) + 1
        total += calls
    return total


@family_check("frontier_budget")
def _frontier_budget(m: Mechanism, independent: IndependentReference | None) -> Iterator[str]:
    """Full information fits at easy and medium (the informed agent reaches 1.0 there); an admitted frontier
    environment's budget forces a choice of which probes matter."""
    admitted = 0
    for i in range(8):
        spec = sample_spec(m.id, i, tier="frontier")
        if not check_environment(spec).admitted:
            continue
        admitted += 1
        params = m.params_from_data(spec.params)
        spare = spec.turn_budget - len(spec.reference.optimal_actions)
        if spare >= calls_to_probe_everything(m, params):
            yield f"frontier instance {i}: the budget lets an agent probe it all"
        if not (spec.difficulty.facts_fit < 1 and spec.difficulty.tier == "frontier"):
            yield f"frontier instance {i}: measured {spec.difficulty.tier} with facts_fit " \
                  f"{spec.difficulty.facts_fit}"
    if admitted < 2:
        yield f"only {admitted} of 8 frontier instances admitted; at least 2 must be"


@family_check("players")
def _players(m: Mechanism, independent: IndependentReference | None) -> Iterator[str]:
    """Every scripted player knows only what an agent could know: the public view shows no hidden figure, and in
    every tier each baseline's calls (the default, the informed agent, the naive prober, every heuristic), replayed
    through the hidden mode's tools, reach the utility it was recorded with (or played to at a seat)."""
    for tier in m.tiers():
        spec = sample_spec(m.id, 0, tier=tier)
        params = m.params_from_data(spec.params)
        public = {round(float(x), 6) for x in m.public_numbers(params)} | {float(spec.turn_budget)}
        secret = {round(float(x), 6) for x in m.secret_numbers(params)} - public
        shown = sorted(observed_numbers(m.public_view(params)) & secret)
        if shown:
            yield f"{tier}: public_view shows the hidden figure(s) {shown[:3]}: it may hold only public structure"
        ref = spec.reference
        recorded = {"default": (ref.default_actions, ref.u0),
                    INFORMED: (ref.informed_actions, ref.baselines.get(INFORMED)),
                    NAIVE_PROBER: (ref.naive_actions, ref.baselines.get(NAIVE_PROBER))}
        for name, policy in m.heuristic_policies().items():
            recorded[name] = run_policy(m, params, policy, spec.turn_budget)
        for name, (calls, u) in recorded.items():
            env = Environment(spec, "hidden")
            for action in calls:
                if env.done:
                    break
                tool, args = tool_call(env, action)
                env.step(tool, args)
            if u is None or not _close(env.utility(), u):
                yield f"{tier}: the {name} player's calls replay through the hidden tools to {env.utility():.6g}, " \
                      f"it was recorded with {u}"


@family_check("grid")
def _grid(m: Mechanism, independent: IndependentReference | None) -> Iterator[str]:
    """A plan spreads each family over its grid, so every cell must yield environments (text length, band)."""
    for size, horizon in m.grid():
        if not (m.size_range[0] <= size <= m.size_range[1] and m.horizon_range[0] <= horizon <= m.horizon_range[1]):
            yield f"cell {size}x{horizon} lies outside the size range {m.size_range} or horizon range " \
                  f"{m.horizon_range}"
            continue
        verdicts = [check_environment(sample_spec(m.id, i, size, horizon)) for i in range(6)]
        admitted = sum(v.admitted for v in verdicts)
        reasons = {v.reason for v in verdicts if not v.admitted}
        if admitted < 4:
            yield f"cell {size}x{horizon}: {admitted}/6 admitted; {sorted(reasons)[:2]}"


@family_check("params_as_data")
def _params_as_data(m: Mechanism, independent: IndependentReference | None) -> Iterator[str]:
    """Parameters round-trip through data, and bad shapes get a one-line ParamsError."""
    params = _sample(m, [61, 0])
    data = params.model_dump(mode="json")
    if m.params_from_data(data) != params:
        yield "parameters dumped as data do not read back as the same parameters"
    if m.solve(m.params_from_data(data)).u_star != m.solve(params).u_star:
        yield "parameters read back from data solve to another u*"
    refused = 0
    for name, value in data.items():
        if isinstance(value, list) and len(value) > 1:
            try:
                m.params_from_data({**data, name: value[:-1]})
            except ParamsError as error:
                refused += 1
                if "\n" in str(error) or not str(error).startswith(f"bad {m.id} parameters"):
                    yield f"dropping an entry of {name!r} gives a ParamsError that is not one line starting " \
                          f"'bad {m.id} parameters': {str(error)[:200]!r}"
    if not refused:
        yield "dropping an entry of a list field should break a shape check"
    try:
        m.params_from_data({**data, "no_such_field": 1})
    except ParamsError as error:
        if not re.search("unexpected|Extra inputs", str(error)):
            yield f"an unknown field is refused without saying it is unexpected: {str(error)[:200]!r}"
    else:
        yield "an unknown field 'no_such_field' is accepted"


@family_check("declarations")
def _declarations(m: Mechanism, independent: IndependentReference | None) -> Iterator[str]:
    """The family declares its facts once, its belief, heuristics and every tier."""
    from mechanisms.facts import REQUIRED_RULES
    from schemas.tiers import TIERS
    from setter.corpus import BUNDLE_KEYS, VOCAB_KEYS
    from setter.phrasebook import vocabulary

    for hook in ("facts", "believed", "default_policy", "heuristic_policies"):
        if getattr(type(m), hook) is getattr(Mechanism, hook):
            yield f"{m.id} declares no {hook}: see CONTRIBUTING.md, 'Players'"
    for hook in ("believed", "probe_order", "listing_order"):
        taken = list(inspect.signature(getattr(m, hook)).parameters)
        if taken != ["known"]:
            yield f"{m.id}.{hook} takes {taken}: it must take only what the agent knows, (known: Knowledge)"
    if "describe" in type(m).__dict__:
        yield f"{m.id} states its facts twice: drop describe()"
    if list(m.tiers()) != list(TIERS):
        yield f"the tiers are {list(m.tiers())}, not {list(TIERS)}"
    params = _sample(m, [13, 0])
    keys = [f.key for f in m.facts(params, vocabulary({k: k for k in (*VOCAB_KEYS, *BUNDLE_KEYS)}))]
    missing = [key for key in REQUIRED_RULES if key not in keys]
    if missing:
        yield f"the facts state no {missing[0]!r} rule"
    if len(set(keys)) != len(keys):
        yield f"a fact key repeats: {sorted(k for k in set(keys) if keys.count(k) > 1)}"
    if not m.heuristic_policies():
        yield f"{m.id} declares no heuristic agent: add one to heuristic_policies()"
    if m.believed(m.knowledge(params)) is None:
        yield "believed() returns nothing"


OPERATION_NAME = re.compile(r"^[a-z][a-z0-9_]{0,47}$")
KINDS = get_args(ToolKind)


@family_check("operation_schema")
def _operation_schema(m: Mechanism, independent: IndependentReference | None) -> Iterator[str]:
    """The operations' schema is well formed on instances of every cell: names, kinds, summaries, argument types and
    bounds, a decoy that says what it estimates, and one operation of every kind."""
    cells = dict.fromkeys([(m.default_size, m.default_horizon), *m.grid(),
                           *(cell for tier in m.tiers().values() for cell in tier.grid)])
    for index, (size, horizon) in enumerate(cells):
        params = _sample(m, [71, index], size, horizon)
        operations = m.operations(params)
        names = [op.name for op in operations]
        where = f"at {size}x{horizon}"
        if len(set(names)) != len(names):
            yield f"{where}: an operation name repeats: {names}"
        for kind in KINDS:
            if not any(op.kind == kind for op in operations):
                yield f"{where}: no {kind} operation"
        if not any(op.decoy for op in operations):
            yield f"{where}: no decoy (a sticker the default policy trusts)"
        for op in operations:
            yield from (f"{where}: {problem}" for problem in _operation_problems(op))


def _operation_problems(op) -> Iterator[str]:
    if not OPERATION_NAME.match(op.name):
        yield f"operation name {op.name!r} is not lower-case letters, digits and _ (at most 48)"
    if op.name in RUNTIME_OPERATION_NAMES:
        yield f"operation {op.name!r} takes the name of a runtime tool"
    if op.kind not in KINDS:
        yield f"operation {op.name!r} has the kind {op.kind!r}, not one of {', '.join(KINDS)}"
    if not op.summary.strip() or "\n" in op.summary:
        yield f"operation {op.name!r} needs a one-line summary"
    if op.decoy and (op.kind != "info" or not op.estimates):
        yield f"the decoy {op.name!r} must be an info operation that names the quantity it estimates"
    for name, arg in op.args.items():
        about = f"argument {name!r} of {op.name!r}"
        if not OPERATION_NAME.match(name):
            yield f"{about} is not lower-case letters, digits and _"
        if arg.type not in ("integer", "number", "array"):
            yield f"{about} has the type {arg.type!r}; operations take integers, numbers or arrays of them"
        if arg.type == "array" and arg.items not in ("integer", "number"):
            yield f"{about} is an array of {arg.items!r}; it must hold integers or numbers"
        if not arg.description.strip():
            yield f"{about} has no description (a string in its Annotated type, or an Args: entry)"
        low, high = arg.minimum, arg.maximum
        integral = arg.type == "integer" or arg.items == "integer"
        for bound in (low, high):
            if bound is not None and (not np.isfinite(bound) or integral and float(bound) != int(bound)):
                yield f"{about} has the bound {bound!r}, not a finite {'integer' if integral else 'number'}"
        if low is not None and high is not None and low > high:
            yield f"{about} has its minimum {low} above its maximum {high}"


@family_check("phrase_file")
def _phrase_file(m: Mechanism, independent: IndependentReference | None) -> Iterator[str]:
    """setter/phrases/<family>.json phrases every operation (a tool name and a description) and no other."""
    phrases = family_phrases(m.id)
    if not phrases:
        yield f"no phrase file: write setter/phrases/{m.id}.json"
        return
    declared = phrases.get("operations", {})
    operations: dict[str, None] = {}
    for cell_index, (size, horizon) in enumerate(dict.fromkeys([(m.default_size, m.default_horizon), *m.grid()])):
        operations.update(dict.fromkeys(op.name for op in m.operations(_sample(m, [71, cell_index], size, horizon))))
    for name in operations:
        entry = declared.get(name)
        if entry is None:
            yield f"the phrase file has no entry for the operation {name!r}"
        elif not (isinstance(entry, list) and len(entry) == 2 and all(isinstance(p, str) and p for p in entry)):
            yield f"the phrase file's entry for {name!r} must be [tool name pattern, description pattern]"
    for name in declared:
        if name not in operations:
            yield f"the phrase file phrases {name!r}, which is not an operation of {m.id}"
