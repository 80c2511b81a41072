"""Admission of a rendered environment: the checks that run on every environment a plan generates.

:func:`admit` (:func:`check_environment`) runs, in order (a verdict names the first that fails): structure,
completeness (``envs.completeness``), C2 (the default's band), C3 (the oracle's replay reaches u* and nothing beats
it), repeat, default_replay (the default's replay reaches u0), ending, ceiling, difficulty, decision_leak, prose
(``envs.lint``), leak; and executes (the paper's C1: nothing in the dynamics or the spec crashes). Every baseline is
played through the real runtime and the rendered tools, never through a shortcut.

Every reason names the cause and the fix in one line, ``"<check>: <cause>; fix: <what to change where>"``: it goes
back to the LLM setter as feedback and into the ``attempts`` table. The family contract that tests run over every
registered family is ``envs.conformance``.
"""

from __future__ import annotations

import json
import re
import traceback
from dataclasses import dataclass, field
from typing import Any

import mechanisms
from envs.agents import play
from envs.completeness import Incomplete, bound_observations, check_completeness, observed_numbers
from envs.difficulty import INFORMED, MIN_INFORMED_SCORE, NAIVE_PROBER
from envs.environment import ENDING_KEY, Environment
from envs.lint import LintError, lint
from mechanisms.base import parsed_once
from schemas.envspec import MODES, RUNTIME_OPERATION_NAMES, EnvSpec

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

# the fixes several checks share ({family} is the environment's family)
BAND_FIX = ("none for one draw (the plan draws another); when most draws are refused, retune the sampler or u0_band "
            "of mechanisms/{family}.py so that the default lands inside the band")
ORACLE_FIX = ("make solve's optimal_actions in mechanisms/{family}.py valid calls that replay to u* through the tools "
              "(apply the actions with mechanism.run to see where they part)")
ENDING_FIX = ("end every episode through the runtime (envs.environment), which puts the family's ledger under "
              f"{ENDING_KEY!r} in the last observation; never end one inside an operation's return value")
EXECUTES_FIX = ("the dynamics or the rendering crashed: reproduce it with envs.environment.Environment(spec, mode) and "
                "fix the code at that line (an operation refuses bad input with ActionError)")
COMPLETENESS_FIX = ("declare every hidden value once in the facts() of mechanisms/{family}.py, with the probe or info "
                    "operation that reveals it bound to a tool (see CONTRIBUTING.md, 'How a family is made')")
PROSE_FIXES = {  # per kind of envs.lint defect
    "spends": "say in the tool's description what a call spends ('spends one turn')",
    "internal_key": "name the observation key under `observations` in setter/phrases/{family}.json",
    "internal_value": "name the value under `observations` in setter/phrases/{family}.json",
    "wording": "use the passage's own words: a `vocabulary` key in setter/phrases/{family}.json, not a generic word",
    "foreign_party": "name only this passage's persona, source and counterpart (setter/corpus/passages.json)",
    "decoy_label": ("name what the decoy estimates in its tool and its observation, with the `estimates` nouns of "
                    "setter/phrases/{family}.json and the bundle's source"),
    "article": "write 'a' before a consonant sound and 'an' before a vowel sound in that text",
    "plural": "write the plural out (no '(s)', no 'numbered 1 to 1') in that text",
    "residue": "format the figure with mechanisms.prose (figure, planned) as a ledger does",
    "count": "number things in the observations no more often than the rules count them (mechanisms/{family}.py)",
}


FIX = "; fix: "  # what separates a problem's cause from its fix


@dataclass(frozen=True)
class Problem:
    """One failed check, in one line: its name, the cause (`message`) and what to change where (`fix`)."""

    check: str
    message: str
    fix: str = ""

    def __str__(self) -> str:
        return f"{self.check}: {self.message}{FIX}{self.fix}" if self.fix else f"{self.check}: {self.message}"


class Rejected(Exception):
    """An environment that fails one admission check; the message is the reason: the check, the cause and the fix."""

    def __init__(self, check: str, reason: str, fix: str):
        super().__init__(str(Problem(check, reason, fix)))
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
        cause, _, fix = (self.reason or "").removeprefix(f"{self.check}: ").partition(FIX)
        return [Problem(self.check, cause, fix)]


def close(a: float, b: float) -> bool:
    """The same utility, to the checker's relative tolerance."""
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
            raise Rejected("completeness", str(gap), COMPLETENESS_FIX.format(family=spec.family)) from None
        checks["completeness"] = "ok"
        _check_band(spec, checks)
        hidden_plays = _check_play(spec, checks, env_id)
        hidden_plays.extend(_check_ceiling(spec, checks, env_id))
        leaked = decision_leaks(spec, hidden_plays)
        if leaked:
            raise Rejected("decision_leak", leaked, f"return only what the decision did from that operation in "
                           f"mechanisms/{spec.family}.py; the outcome comes with a clock call or the ending")
        checks["decision_leak"] = "ok"
        try:
            lint(spec, observations, hidden_plays)
        except LintError as defect:
            raise Rejected("prose", str(defect), PROSE_FIXES.get(defect.kind, PROSE_FIXES["wording"]).format(
                family=spec.family)) from None
        checks["prose"] = "ok"
        leaks = hidden_leaks(spec)
        if leaks:
            raise Rejected("leak", f"hidden mode shows parameter or solution values {leaks[:5]}",
                           "keep hidden figures out of the hidden instructions, the tools and public_view "
                           f"(mechanisms/{spec.family}.py); they belong to probe observations only")
        checks["leak"] = "ok"
    except Rejected as rejection:
        return Admission(False, str(rejection), rejection.check, checks)
    except Exception as error:  # any crash of the dynamics or the spec is a rejection, not a failure
        where = traceback.extract_tb(error.__traceback__)[-1]
        cause = f"{type(error).__name__}: {error}"[:400] + f" (at {where.filename}:{where.lineno})"
        return Admission(False, str(Problem(EXECUTES, cause, EXECUTES_FIX)), EXECUTES, checks)
    checks[EXECUTES] = "ok"
    return Admission(True, None, None, checks, env_id)


def check_structure(spec: EnvSpec) -> None:
    """The rendering binds enough well-formed tools to operations that exist, with fitting arguments."""
    mechanism = mechanisms.get(spec.family)
    params = mechanism.params_from_data(spec.params)
    operations = {op.name: op for op in mechanism.operations(params)}
    tools = spec.rendering.tools
    if len(tools) < MIN_TOOLS:
        raise Rejected("structure", f"only {len(tools)} tools; at least {MIN_TOOLS} are required",
                       "bind a tool to every operation of the family (every entry of its phrase file)")
    names = [t.name for t in tools]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise Rejected("structure", f"duplicate tool name {duplicates[0]!r}",
                       "give each tool its own name (the phrase file's tool name patterns must differ)")
    for tool in tools:
        if not TOOL_NAME.match(tool.name):
            raise Rejected("structure", f"invalid tool name {tool.name!r}",
                           "name tools with letters, digits, _ or - only, at most 64 characters")
        if len(tool.description) > MAX_DESCRIPTION_CHARS:
            raise Rejected("structure", f"description of {tool.name!r} is longer than {MAX_DESCRIPTION_CHARS}",
                           f"shorten it to at most {MAX_DESCRIPTION_CHARS} characters")
        if tool.operation in RUNTIME_OPERATION_NAMES:
            continue
        op = operations.get(tool.operation)
        if op is None:
            raise Rejected("structure", f"tool {tool.name!r} is bound to unknown operation {tool.operation!r}",
                           f"bind it to one of the operations {', '.join(operations)}")
        if tool.kind != op.kind:
            raise Rejected("structure", f"tool {tool.name!r} is a {tool.kind} but {op.name!r} is a {op.kind}",
                           f"give the tool the kind of its operation ({op.kind})")
        properties = tool.parameters.get("properties", {})
        bound = {tool.argument_map.get(a, a) for a in properties}
        if bound != set(op.args):
            raise Rejected("structure", f"arguments of {tool.name!r} map to {sorted(bound)}, "
                           f"operation {op.name!r} takes {sorted(op.args)}",
                           "give the tool one parameter per argument of its operation, mapped in argument_map")
    bound_ops = {t.operation for t in tools}
    needed = [op.name for op in operations.values() if op.kind in ("decision", "clock")]
    unbound = [name for name in needed if name not in bound_ops]
    if unbound:
        raise Rejected("structure", f"no tool is bound to the operation {unbound[0]!r}",
                       f"add a tool bound to {unbound[0]!r} (an entry in setter/phrases/{spec.family}.json)")
    for kind in ("probe", "decision", "clock", "info"):
        if not any(t.kind == kind for t in tools):
            raise Rejected("structure", f"no {kind} tool",
                           f"bind a tool to a {kind} operation of mechanisms/{spec.family}.py")
    if not any(operations[o].decoy for o in bound_ops if o in operations):
        raise Rejected("structure", "no decoy sticker tool (an info operation the default policy trusts)",
                       "bind a tool to the family's decoy operation (the one declared with decoy=True)")
    texts = [*spec.rendering.instructions.values(), spec.rendering.written_prompt]
    if set(spec.rendering.instructions) != set(MODES):
        raise Rejected("structure", f"the instructions cover the modes {', '.join(spec.rendering.instructions)}",
                       f"write instructions for every mode: {', '.join(MODES)}")
    if any(len(text) > MAX_TEXT_CHARS for text in texts):
        raise Rejected("structure", f"an instruction text is longer than {MAX_TEXT_CHARS} characters",
                       f"shorten the story or the family's facts to fit {MAX_TEXT_CHARS} characters")


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
    fix = BAND_FIX.format(family=spec.family)
    if ref.u_star - ref.u0 <= RELATIVE_TOLERANCE * max(1.0, abs(ref.u_star)):
        raise Rejected("C2", "the default policy is already optimal (no gap to learn)", fix)
    if gap <= RELATIVE_TOLERANCE * max(1.0, abs(ref.u_star)):
        raise Rejected("C2", "doing nothing is already optimal", fix)
    position = (ref.u0 - ref.u_idle) / gap
    checks["C2"] = round(position, 6)
    if not low <= position <= high:
        raise Rejected("C2", f"default position {position:.3f} is outside the band [{low}, {high}]", fix)


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
                           f"{_first_error(oracle.trajectory)}", ORACLE_FIX.format(family=spec.family))
        if not close(oracle.u, ref.u_star):
            raise Rejected("C3", f"oracle reached {oracle.u:.6g} in {mode} mode, u* is {ref.u_star:.6g}",
                           ORACLE_FIX.format(family=spec.family))
        if not played:
            repeat = play(env, "oracle")
            if repeat.trajectory != oracle.trajectory or repeat.u != oracle.u:
                raise Rejected("repeat", f"two oracle replays differ in {mode} mode",
                               f"make the dynamics of mechanisms/{spec.family}.py depend only on the parameters "
                               "and the state (no global random state, no set order)")
        baseline = play(env, "default")
        if not close(baseline.u, ref.u0) or baseline.score != 0.0:
            raise Rejected(DEFAULT_REPLAY, f"default policy reached {baseline.u:.6g} in {mode} mode, u0 is "
                           f"{ref.u0:.6g}", f"make default_policy in mechanisms/{spec.family}.py act only through "
                           "seat.call, so that its calls replay through the tools to the utility it records")
        idle = play(env, "idle")
        for result in (oracle, baseline, idle):
            missing = ending_problem(env, result)
            if missing:
                raise Rejected(ENDING, f"{result.agent} in {mode} mode: {missing}", ENDING_FIX)
        fuzz = play(env, "random", seed=len(spec.rendering.tools), max_calls=FUZZ_CALLS)
        for result in (baseline, idle, fuzz):
            if result.u > ref.u_star + RELATIVE_TOLERANCE * max(1.0, abs(ref.u_star)):
                raise Rejected("C3", f"{result.agent} beat u* in {mode} mode: {result.u:.6g} > {ref.u_star:.6g}",
                               f"make solve in mechanisms/{spec.family}.py exact (or u* the ceiling of every play), "
                               "or refuse the move that beats it with an ActionError")
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
                if not close(after, before):
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
        raise Rejected("ceiling", "the environment records no difficulty measures",
                       "build the spec with measured=envs.difficulty.measure(...) (setter.spec.build_spec)")
    played = []
    for agent, name in (("informed", INFORMED), ("naive", NAIVE_PROBER)):
        env = Environment(spec, "hidden", env_id)
        result = play(env, agent)
        recorded = spec.reference.baselines.get(name)
        if recorded is None or not close(result.u, recorded):
            raise Rejected("ceiling", f"the {name.replace('_', ' ')} reached {result.u:.6g} through the tools, "
                           f"{recorded} was recorded", f"make believed, probe_order and act_on_belief of "
                           f"mechanisms/{spec.family}.py read only the seat's knowledge and act only through seat.call")
        missing = ending_problem(env, result)
        if missing:
            raise Rejected(ENDING, f"{name} in hidden mode: {missing}", ENDING_FIX)
        played.append(result.trajectory)
    if difficulty.informed_score < MIN_INFORMED_SCORE:
        raise Rejected("ceiling", f"the informed agent scores {difficulty.informed_score:.3f} within the budget: "
                       "the budget, not skill, decides the score",
                       f"give the tier more turns (its probe_share in the family's tiers()) or a smaller cell, so "
                       f"that full information scores at least {MIN_INFORMED_SCORE}")
    checks["ceiling"] = round(difficulty.informed_score, 6)
    checks["skill_gap"] = difficulty.skill_gap
    if difficulty.requested is not None and difficulty.requested != difficulty.tier:
        raise Rejected("difficulty", f"measured {difficulty.tier}, the plan asked for {difficulty.requested}",
                       f"none for one draw; when most are refused, retune the {difficulty.requested} tier (its cells "
                       f"or probe_share in difficulty_tiers of mechanisms/{spec.family}.py; benchmarks/difficulty.py "
                       "measures them)")
    checks["difficulty"] = difficulty.tier
    return played


def _first_error(trajectory: list[dict[str, Any]]) -> str:
    for step in trajectory:
        if "error" in step["result"]:
            return f"{step['tool']}: {step['result']['error']}"
    return ""



def admit(spec: EnvSpec) -> Admission:
    """Run every check of the environment checker; the first failure is the reason."""
    return check_environment(spec)
