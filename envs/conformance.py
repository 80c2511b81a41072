"""The family conformance suite: the contract every registered family satisfies, and the only home of every
family-wide rule.

:func:`check_family` is what ``tests/mechanisms/test_conformance.py`` runs over every registered family, one check of
:data:`FAMILY_CHECKS` at a time: sampling determinism, the solver against an independent method, the exact replay of
the optimal actions, u* above the default, idle and baselines, random calls that raise only ``ActionError`` and leave
the state unchanged when refused, the operations' schema, the phrase file, the corpus's domains, and admission
(``envs.admission``) over sampled instances of every cell and tier. It returns every problem it finds; each names its
cause and its fix in one line (``"<check>: <cause>; fix: <what to change where>"``), once however many instances show
it.
"""

from __future__ import annotations

import copy
import inspect
import json
import re
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, get_args

import numpy as np

import mechanisms
from envs.admission import Admission, Problem, check_environment, close
from envs.agents import play, random_agent, random_arguments, tool_call
from envs.completeness import observed_numbers
from envs.difficulty import INFORMED, NAIVE_PROBER, measure
from envs.environment import Environment
from mechanisms.base import ActionError, Mechanism, ParamsError, remembered_solutions
from mechanisms.players import run_policy
from schemas.envspec import MODES, RUNTIME_OPERATION_NAMES, Action, EnvSpec, ToolKind
from setter.corpus import Passage, domains, passages_for
from setter.phrasebook import family_phrases
from setter.spec import build_spec, turn_budget
from setter.template import TemplateSetter, render
from setter.tools import argument_schema


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


Finding = tuple[str, str]  # (the cause, the fix): what a family check yields
FamilyCheck = Callable[[Mechanism, "IndependentReference | None"], Iterator[Finding]]
FAMILY_CHECKS: dict[str, FamilyCheck] = {}
MIN_DOMAINS = 20  # the corpus's domains whose passages must suit every family (a plan tells each in many settings)


def family_check(name: str) -> Callable[[FamilyCheck], FamilyCheck]:
    def add(check: FamilyCheck) -> FamilyCheck:
        FAMILY_CHECKS[name] = check
        return check

    return add


def check_family(mechanism: Mechanism, independent: IndependentReference | None = None,
                 checks: Iterable[str] | None = None) -> list[Problem]:
    """Every problem the family checks find (or those of `checks`, names of FAMILY_CHECKS); [] when it conforms.

    Each problem names its cause and its fix in one line; findings of one check that share a fix (the same defect on
    several instances, cells or tiers) are one problem, the first cause with a count of the others. The family must
    be registered (environments are built through the registry); `independent` is its independent reference (the
    `optimal` check reports its absence). A check that crashes reports the crash as its problem."""
    names = list(FAMILY_CHECKS) if checks is None else list(checks)
    unknown = [name for name in names if name not in FAMILY_CHECKS]
    if unknown:
        raise ValueError(f"unknown family check {unknown[0]!r}; the checks are {', '.join(FAMILY_CHECKS)}")
    try:
        registered = mechanisms.get(mechanism.id)
    except mechanisms.UnknownFamilyError:
        registered = None
    if registered is not mechanism:
        return [Problem("registered", f"{mechanism.id} is not the registered family of that id",
                        "call mechanisms.registry.register(...) at the end of its module and import it")]
    problems = []
    for name in names:
        findings: dict[str, list[str]] = {}  # fix -> causes, in the order found
        try:
            with remembered_solutions():
                for cause, fix in FAMILY_CHECKS[name](mechanism, independent):
                    findings.setdefault(fix, []).append(cause)
        except Exception as error:  # noqa: BLE001 - a crash is the check's problem, with where it happened
            where = traceback.extract_tb(error.__traceback__)[-1]
            cause = f"raised {type(error).__name__}: {error}"[:400] + f" (at {where.filename}:{where.lineno})"
            findings.setdefault(f"{_crash_fix(mechanism.id, error, where)}; check_family(mechanisms.get("
                                f"{mechanism.id!r}), checks=[{name!r}]) reproduces it", []).append(cause)
        for fix, causes in findings.items():
            more = f" (and {len(causes) - 1} more like it)" if len(causes) > 1 else ""
            problems.append(Problem(name, causes[0] + more, fix))
    return problems


def _crash_fix(family: str, error: Exception, where: traceback.FrameSummary) -> str:
    """What to change for a crash: the family's data when the corpus or a phrase pattern is at fault, else the code."""
    if where.name == "load_corpus":  # setter/corpus.py refuses the corpus file itself
        return ("complete that passage in setter/corpus/passages.json: each family in its `families` needs a "
                "`bundles[<family>]` with a `role` and a `source` (CONTRIBUTING.md, 'Tagging corpus passages')")
    if isinstance(error, KeyError) and error.args and "/setter/" in where.filename.replace("\\", "/"):
        return (f"a pattern of setter/phrases/{family}.json names {{{error.args[0]}}}, a word its passages lack: "
                "use a key of the passage's `vocab` or of the family's bundle (`role`, `source`), or add the word "
                "to its bundles in setter/corpus/passages.json")
    return "fix the code at that line"


def _sample(m: Mechanism, seed: list[int], size: int | None = None, horizon: int | None = None):
    return m.sample(np.random.default_rng(seed), size or m.default_size, horizon or m.default_horizon)


def _near(a: float, b: float, rel: float, absolute: float) -> bool:
    """pytest.approx's test: |a - b| within the larger of rel * |b| and the absolute tolerance."""
    return abs(a - b) <= max(rel * abs(b), absolute)


def _above(u: float, u_star: float, rel: float) -> bool:
    return u > u_star + rel * max(1.0, abs(u_star))


def _why_refused(verdicts: Iterable[Admission], fallback: str) -> Finding:
    """What refused the environments (the commonest checks, with the first reason) and the first refusal's fix (or
    `fallback` when every one was admitted): the end of a finding about too few admitted environments."""
    refused = [v for v in verdicts if not v.admitted]
    if not refused:
        return "", fallback
    counts = Counter(v.check for v in refused)
    first = refused[0].problems[0]
    tally = ", ".join(f"{n} {check}" for check, n in counts.most_common())
    return f"; refused by {tally}; the first: {first.check}: {first.message}", first.fix or fallback


def _solver_fix(m: Mechanism) -> str:
    return (f"make solve() in mechanisms/{m.id}.py exact (or u* the hindsight ceiling no play can pass), or refuse the "
            "move that passes it with ActionError")


def _replay_fix(m: Mechanism) -> str:
    return (f"make solve()'s optimal_actions in mechanisms/{m.id}.py the plan its u_star is the value of: "
            "m.run(params, actions) must reach it")


def _refusal_fix(m: Mechanism) -> str:
    return (f"check the arguments in that operation of mechanisms/{m.id}.py and raise mechanisms.base.ActionError "
            "before anything writes to the state")


@family_check("deterministic_sampling")
def _deterministic_sampling(m: Mechanism, independent: IndependentReference | None) -> Iterator[Finding]:
    """The same seed gives the same instance; another seed another one."""
    for i in range(5):
        if _sample(m, [11, i]) != _sample(m, [11, i]):
            yield (f"two draws with the seed [11, {i}] differ",
                   f"draw every random number in sample() of mechanisms/{m.id}.py from its rng argument (no global "
                   "random state, no set order)")
    if _sample(m, [12, 0]) == _sample(m, [11, 0]):
        yield ("the seeds [11, 0] and [12, 0] draw the same instance",
               f"draw the instance from the rng argument of sample() in mechanisms/{m.id}.py, not from constants")


@family_check("optimal")
def _optimal(m: Mechanism, independent: IndependentReference | None) -> Iterator[Finding]:
    """u* equals an independent method's optimum on small instances, and the optimal actions replay to it."""
    if independent is None:
        yield (f"no independent reference for {m.id}",
               f"write tests/mechanisms/references/{m.id}.py with SMALL_KNOBS = (size, horizon) and "
               "reference(mechanism, params) -> u*, computed without the family's solver")
        return
    size, horizon = independent.SMALL_KNOBS
    for i in range(12):
        params = _sample(m, [21, i], size, horizon)
        solution = m.solve(params)
        expected = independent.reference(m, params)
        if not _near(solution.u_star, expected, 1e-6, 1e-6):
            yield (f"instance {i} at {size}x{horizon} (the seed [21, {i}]): u* is {solution.u_star:.9g}, the "
                   f"independent method finds {expected:.9g}",
                   f"find which of solve() in mechanisms/{m.id}.py and tests/mechanisms/references/{m.id}.py is wrong "
                   "on that instance, and correct it")
        replayed = m.run(params, solution.optimal_actions)
        if not _near(replayed, solution.u_star, 1e-9, 1e-9):
            yield (f"instance {i} at {size}x{horizon}: the optimal actions replay to {replayed:.12g}, u* is "
                   f"{solution.u_star:.12g}", _replay_fix(m))


@family_check("reference_bounds")
def _reference_bounds(m: Mechanism, independent: IndependentReference | None) -> Iterator[Finding]:
    """u* (the optimum, or the hindsight ceiling) is reached exactly by its actions and bounds the default, idle and
    recorded baselines and random play through the tools."""
    for i in range(10):
        params = _sample(m, [51, i])
        o = m.outcome(params)
        u_star = o.solution.u_star
        replayed = m.run(params, o.solution.optimal_actions)
        if not _near(replayed, u_star, 1e-9, 1e-9):
            yield f"instance {i}: the optimal actions replay to {replayed:.12g}, u* is {u_star:.12g}", _replay_fix(m)
        for name, u in {"default": o.u0, "idle": o.u_idle, **o.baselines}.items():
            if _above(u, u_star, 1e-9):
                yield f"the {name} policy beats u* on instance {i}: {u:.9g} > {u_star:.9g}", _solver_fix(m)
    spec = sample_spec(m.id, 1)
    u_star = spec.reference.u_star
    for seed in range(20):
        result = play(Environment(spec, "hidden"), "random", seed=seed)
        if _above(result.u, u_star, 1e-9):
            yield f"random play (seed {seed}) beats u* through the tools: {result.u:.9g} > {u_star:.9g}", _solver_fix(m)


@family_check("anchors")
def _anchors(m: Mechanism, independent: IndependentReference | None) -> Iterator[Finding]:
    """Most sampled environments are admitted, and in every mode of each the oracle scores 1, the default 0."""
    verdicts = []
    for i in range(8):
        spec = sample_spec(m.id, i)
        verdicts.append(check_environment(spec))
        if not verdicts[-1].admitted:
            continue
        for mode in MODES:
            env = Environment(spec, mode)
            scores = {agent: play(env, agent).score for agent in ("oracle", "default", "idle")}
            if not _near(scores["oracle"], 1.0, 0.0, 1e-9):
                yield f"instance {i}: the oracle scores {scores['oracle']:.9g} in {mode} mode, not 1", _replay_fix(m)
            if scores["default"] != 0.0:
                yield (f"instance {i}: the default scores {scores['default']:.9g} in {mode} mode, not 0",
                       f"make default_policy in mechanisms/{m.id}.py act only through seat.call, so that its calls "
                       "replay through the tools of every mode to u0")
            if scores["idle"] > 1.0:
                yield (f"instance {i}: the idle agent scores {scores['idle']:.9g} in {mode} mode, above 1",
                       _solver_fix(m))
    admitted = sum(v.admitted for v in verdicts)
    if admitted < 5:
        why, fix = _why_refused(verdicts, f"retune the sampler or u0_band of mechanisms/{m.id}.py")
        yield f"only {admitted} of 8 sampled environments are admitted; at least 5 must be{why}", fix


@family_check("band")
def _band(m: Mechanism, independent: IndependentReference | None) -> Iterator[Finding]:
    """The default policy's position lies inside the family's band on most sampled instances."""
    low, high = m.u0_band
    inside, positions = 0, []
    for i in range(60):
        o = m.outcome(_sample(m, [31, i]))
        u_star = o.solution.u_star
        if o.u0 > u_star + 1e-9 or o.u_idle > u_star + 1e-9:
            yield (f"instance {i}: the default ({o.u0:.9g}) or idle ({o.u_idle:.9g}) policy beats u* ({u_star:.9g})",
                   _solver_fix(m))
        gap = u_star - o.u_idle
        if gap > 0:
            positions.append((o.u0 - o.u_idle) / gap)
        inside += gap > 0 and low <= (o.u0 - o.u_idle) / gap <= high and o.u0 < u_star
    if inside < 0.85 * 60:
        spread = f" (the positions span {min(positions):.3f} to {max(positions):.3f})" if positions else ""
        yield (f"the default's position is inside the band [{low}, {high}] on {inside} of 60 instances; at least 51 "
               f"must be{spread}",
               f"retune u0_band or what misleads the default (the decoy's error, the sampler) in "
               f"mechanisms/{m.id}.py")


@family_check("tool_fuzz")
def _tool_fuzz(m: Mechanism, independent: IndependentReference | None) -> Iterator[Finding]:
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
                    yield f"{mode} mode: {name}({args}) raised {type(error).__name__}: {error}"[:300], _refusal_fix(m)
                    return
                calls += 1
                if '"error"' in reply[:10] and env.state != before:
                    yield f"{mode} mode: {name}({args}) was refused and changed the state"[:300], _refusal_fix(m)
                    return
            if _above(env.utility(), u_star, 1e-6):
                yield f"{mode} mode: random play reached {env.utility():.9g}, above u* {u_star:.9g}", _solver_fix(m)


@family_check("refusals")
def _refusals_check(m: Mechanism, independent: IndependentReference | None) -> Iterator[Finding]:
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
            yield f"{action.op}({action.args}) raised {type(error).__name__}, not ActionError: {error}"[:300], \
                _refusal_fix(m)
        else:
            yield f"{action.op}({action.args}) was accepted", _refusal_fix(m)
        if state != before:
            yield f"{action.op}({action.args}) was refused and changed the state", _refusal_fix(m)
            return
    yield from _action_fuzz(m, params)


def _action_fuzz(m: Mechanism, params, calls: int = 600) -> Iterator[Finding]:
    """Random actions on the operations (arguments that often fit their schema, sometimes not): each is applied, with
    an observation and a state that are JSON, or raises ActionError with the state as it was."""
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
            observation = m.apply(params, state, action)
        except ActionError:
            if state != before:
                yield f"{op.name}({action.args}) was refused and changed the state"[:300], _refusal_fix(m)
                return
        except Exception as error:  # noqa: BLE001 - the problem reported
            yield f"{op.name}({action.args}) raised {type(error).__name__}, not ActionError: {error}"[:300], \
                _refusal_fix(m)
            return
        else:
            try:
                json.dumps([observation, state])
            except (TypeError, ValueError) as error:
                yield (f"{op.name}({action.args}) left an observation or a state that is not JSON: {error}"[:300],
                       f"keep observations and the state of mechanisms/{m.id}.py to plain numbers, strings, lists "
                       "and dicts with string keys")
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
def _frontier_budget(m: Mechanism, independent: IndependentReference | None) -> Iterator[Finding]:
    """Full information fits at easy and medium (the informed agent reaches 1.0 there); an admitted frontier
    environment's budget forces a choice of which probes matter."""
    retune = (f"retune the frontier tier in mechanisms/{m.id}.py (larger cells or a smaller probe_share) and measure "
              f"it with benchmarks/difficulty.py --families {m.id}")
    verdicts = []
    for i in range(8):
        spec = sample_spec(m.id, i, tier="frontier")
        verdicts.append(check_environment(spec))
        if not verdicts[-1].admitted:
            continue
        params = m.params_from_data(spec.params)
        spare = spec.turn_budget - len(spec.reference.optimal_actions)
        if spare >= calls_to_probe_everything(m, params):
            yield f"frontier instance {i}: the budget lets an agent probe it all", retune
        if not (spec.difficulty.facts_fit < 1 and spec.difficulty.tier == "frontier"):
            yield (f"frontier instance {i}: measured {spec.difficulty.tier} with facts_fit "
                   f"{spec.difficulty.facts_fit}", retune)
    admitted = sum(v.admitted for v in verdicts)
    if admitted < 2:
        why, fix = _why_refused(verdicts, retune)
        yield f"only {admitted} of 8 frontier instances admitted; at least 2 must be{why}", fix


@family_check("players")
def _players(m: Mechanism, independent: IndependentReference | None) -> Iterator[Finding]:
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
            yield (f"{tier}: public_view shows the hidden figure(s) {shown[:3]}",
                   f"keep only public structure (sizes, numbering, public numbers) in public_view of "
                   f"mechanisms/{m.id}.py; a hidden figure reaches a player through a probe")
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
            if u is None or not close(env.utility(), u):
                yield (f"{tier}: the {name} player's calls replay through the hidden tools to {env.utility():.6g}, "
                       f"it was recorded with {u}",
                       f"make the {name} player of mechanisms/{m.id}.py act only through seat.call and read only "
                       "seat.known, so that its calls are the whole of its play")


@family_check("grid")
def _grid(m: Mechanism, independent: IndependentReference | None) -> Iterator[Finding]:
    """A plan spreads each family over its grid, so every cell must yield environments (text length, band)."""
    for size, horizon in m.grid():
        if not (m.size_range[0] <= size <= m.size_range[1] and m.horizon_range[0] <= horizon <= m.horizon_range[1]):
            yield (f"cell {size}x{horizon} lies outside the size range {m.size_range} or horizon range "
                   f"{m.horizon_range}",
                   f"move the cell into the ranges, or widen size_range or horizon_range, in mechanisms/{m.id}.py")
            continue
        verdicts = [check_environment(sample_spec(m.id, i, size, horizon)) for i in range(6)]
        admitted = sum(v.admitted for v in verdicts)
        if admitted < 4:
            why, fix = _why_refused(verdicts, f"retune the sampler of mechanisms/{m.id}.py for this cell")
            yield (f"cell {size}x{horizon}: {admitted} of 6 admitted; at least 4 must be{why}",
                   f"{fix}; or drop the cell from the grid of mechanisms/{m.id}.py")


@family_check("params_as_data")
def _params_as_data(m: Mechanism, independent: IndependentReference | None) -> Iterator[Finding]:
    """Parameters round-trip through data, and bad shapes get a one-line ParamsError."""
    model = f"the Params model of mechanisms/{m.id}.py"
    params = _sample(m, [61, 0])
    data = params.model_dump(mode="json")
    if m.params_from_data(data) != params:
        yield ("parameters dumped as data do not read back as the same parameters",
               f"make every field of {model} plain data (numbers, strings, lists of them) that reads back equal")
    if m.solve(m.params_from_data(data)).u_star != m.solve(params).u_star:
        yield ("parameters read back from data solve to another u*",
               f"make every field of {model} plain data (numbers, strings, lists of them) that reads back equal")
    refused = 0
    for name, value in data.items():
        if isinstance(value, list) and len(value) > 1:
            try:
                m.params_from_data({**data, name: value[:-1]})
            except ParamsError as error:
                refused += 1
                if "\n" in str(error) or not str(error).startswith(f"bad {m.id} parameters"):
                    yield (f"dropping an entry of {name!r} gives a ParamsError that is not one line starting "
                           f"'bad {m.id} parameters': {str(error)[:200]!r}",
                           "raise ValueError in the validators of the Params model and keep Mechanism.params_from_data "
                           "(mechanisms/base.py), which words the ParamsError so")
    if not refused:
        yield ("dropping an entry of a list field is accepted",
               f"check the list fields' lengths against the sizes in a model_validator of {model}")
    try:
        m.params_from_data({**data, "no_such_field": 1})
    except ParamsError as error:
        if not re.search("unexpected|Extra inputs", str(error)):
            yield (f"an unknown field is refused without saying it is unexpected: {str(error)[:200]!r}",
                   f"let pydantic refuse extra fields in {model} (extra='forbid'); it says they are unexpected")
    else:
        yield "an unknown field 'no_such_field' is accepted", f"forbid extra fields in {model} (extra='forbid')"


@family_check("declarations")
def _declarations(m: Mechanism, independent: IndependentReference | None) -> Iterator[Finding]:
    """The family declares its facts once, its belief, heuristics and every tier."""
    from mechanisms.facts import REQUIRED_RULES
    from schemas.tiers import TIERS
    from setter.corpus import BUNDLE_KEYS, VOCAB_KEYS
    from setter.phrasebook import vocabulary

    where = f"mechanisms/{m.id}.py"
    for hook in ("facts", "believed", "default_policy", "heuristic_policies"):
        if getattr(type(m), hook) is getattr(Mechanism, hook):
            yield f"{m.id} declares no {hook}", f"define {hook} in {where}: see CONTRIBUTING.md, 'Players'"
    for hook in ("believed", "probe_order", "listing_order"):
        taken = list(inspect.signature(getattr(m, hook)).parameters)
        if taken != ["known"]:
            yield (f"{m.id}.{hook} takes {taken}",
                   f"define it in {where} as {hook}(self, known: Knowledge): it may read only what the agent knows")
    if "describe" in type(m).__dict__:
        yield f"{m.id} states its facts twice (facts and describe)", f"drop describe() from {where}"
    if list(m.tiers()) != list(TIERS):
        yield (f"the tiers are {list(m.tiers())}, not {list(TIERS)}",
               f"declare one Tier per name of schemas.tiers.TIERS, in that order, in difficulty_tiers of {where}")
    params = _sample(m, [13, 0])
    keys = [f.key for f in m.facts(params, vocabulary({k: k for k in (*VOCAB_KEYS, *BUNDLE_KEYS)}))]
    missing = [key for key in REQUIRED_RULES if key not in keys]
    if missing:
        yield f"the facts state no {missing[0]!r} rule", f"add the rule Fact {missing[0]!r} to facts() in {where}"
    if len(set(keys)) != len(keys):
        yield (f"a fact key repeats: {sorted(k for k in set(keys) if keys.count(k) > 1)}",
               f"state each fact once in facts() of {where}: one key, one Fact")
    if not m.heuristic_policies():
        yield f"{m.id} declares no heuristic agent", f"add a naive policy to heuristic_policies() in {where}"
    if m.believed(m.knowledge(params)) is None:
        yield ("believed() returns nothing",
               f"return the agent's belief (parameters built from what it knows) from believed in {where}")


OPERATION_NAME = re.compile(r"^[a-z][a-z0-9_]{0,47}$")
KINDS = get_args(ToolKind)


@family_check("operation_schema")
def _operation_schema(m: Mechanism, independent: IndependentReference | None) -> Iterator[Finding]:
    """The operations' schema is well formed on instances of every cell: names, kinds, summaries, argument types and
    bounds, a decoy that says what it estimates, and one operation of every kind. A problem found in several cells is
    one finding that lists them."""
    cells = dict.fromkeys([(m.default_size, m.default_horizon), *m.grid(),
                           *(cell for tier in m.tiers().values() for cell in tier.grid)])
    where = f"mechanisms/{m.id}.py"
    found: dict[Finding, list[str]] = {}
    for index, (size, horizon) in enumerate(cells):
        params = _sample(m, [71, index], size, horizon)
        operations = m.operations(params)
        names = [op.name for op in operations]
        problems: list[Finding] = []
        if len(set(names)) != len(names):
            problems.append((f"an operation name repeats: {names}", f"give each operation of {where} its own name"))
        for kind in KINDS:
            if not any(op.kind == kind for op in operations):
                problems.append((f"no {kind} operation", f"add a method marked @{kind} to {where}"))
        if not any(op.decoy for op in operations):
            problems.append(("no decoy (a posted sheet the default policy trusts)",
                             f"mark the info operation that shows the posted estimates @info(decoy=True, "
                             f"estimates='<the observation key it stands in for>') in {where}"))
        for op in operations:
            problems.extend(_operation_problems(op, where))
        for problem in problems:
            found.setdefault(problem, []).append(f"{size}x{horizon}")
    for (cause, fix), at in found.items():
        yield f"{cause} (at {', '.join(at)})", fix


def _operation_problems(op, where: str) -> Iterator[Finding]:
    if not OPERATION_NAME.match(op.name):
        yield (f"operation name {op.name!r} is not lower-case letters, digits and _ (at most 48)",
               f"rename the method in {where}")
    if op.name in RUNTIME_OPERATION_NAMES:
        yield f"operation {op.name!r} takes the name of a runtime tool", f"rename the method in {where}"
    if op.kind not in KINDS:
        yield (f"operation {op.name!r} has the kind {op.kind!r}, not one of {', '.join(KINDS)}",
               f"mark the method with one of @{', @'.join(KINDS)} in {where}")
    if not op.summary.strip() or "\n" in op.summary:
        yield (f"operation {op.name!r} has no one-line summary",
               f"give the method {op.name!r} a docstring whose first line says what a call does, in {where}")
    if op.decoy and (op.kind != "info" or not op.estimates):
        yield (f"the decoy {op.name!r} is not an info operation that names the quantity it estimates",
               f"mark it @info(decoy=True, estimates='<observation key>') in {where}")
    for name, arg in op.args.items():
        about = f"argument {name!r} of {op.name!r}"
        if not OPERATION_NAME.match(name):
            yield f"{about} is not lower-case letters, digits and _", f"rename the parameter in {where}"
        if arg.type not in ("integer", "number", "array"):
            yield (f"{about} has the type {arg.type!r}",
                   f"annotate it with int, float or a list of them in {where}: operations take only those")
        if arg.type == "array" and arg.items not in ("integer", "number"):
            yield f"{about} is an array of {arg.items!r}", f"annotate it as a list of int or float in {where}"
        if not arg.description.strip():
            yield (f"{about} has no description",
                   f"describe it with a string in its Annotated type or an 'Args:' entry of the docstring in {where}")
        low, high = arg.minimum, arg.maximum
        integral = arg.type == "integer" or arg.items == "integer"
        for bound in (low, high):
            if bound is not None and (not np.isfinite(bound) or integral and float(bound) != int(bound)):
                yield (f"{about} has the bound {bound!r}, not a finite {'integer' if integral else 'number'}",
                       f"bound it with finite {'integers' if integral else 'numbers'} (Between(...)) in {where}")
        if low is not None and high is not None and low > high:
            yield (f"{about} has its minimum {low} above its maximum {high}",
                   f"swap or correct its bounds (Between(low, high)) in {where}")


@family_check("phrase_file")
def _phrase_file(m: Mechanism, independent: IndependentReference | None) -> Iterator[Finding]:
    """setter/phrases/<family>.json phrases every operation (a tool name and a description) and no other."""
    path = f"setter/phrases/{m.id}.json"
    phrases = family_phrases(m.id)
    if not phrases:
        yield f"no phrase file for {m.id}", f"write {path} (see CONTRIBUTING.md, the worked example's phrase file)"
        return
    declared = phrases.get("operations", {})
    operations: dict[str, None] = {}
    for cell_index, (size, horizon) in enumerate(dict.fromkeys([(m.default_size, m.default_horizon), *m.grid()])):
        operations.update(dict.fromkeys(op.name for op in m.operations(_sample(m, [71, cell_index], size, horizon))))
    for name in operations:
        entry = declared.get(name)
        if entry is None:
            yield (f"the phrase file has no entry for the operation {name!r}",
                   f"add \"{name}\": [tool name pattern, description pattern] under \"operations\" in {path}")
        elif not (isinstance(entry, list) and len(entry) == 2 and all(isinstance(p, str) and p for p in entry)):
            yield (f"the phrase file's entry for {name!r} is not [tool name pattern, description pattern]",
                   f"write it as \"{name}\": [tool name pattern, description pattern] in {path}")
    for name in declared:
        if name not in operations:
            yield (f"the phrase file phrases {name!r}, which is not an operation of {m.id}",
                   f"remove {name!r} from \"operations\" in {path}, or rename it to the operation it phrases")


@family_check("domains")
def _domains(m: Mechanism, independent: IndependentReference | None) -> Iterator[Finding]:
    """Passages of at least MIN_DOMAINS of the corpus's domains suit the family (a plan tells it in many settings)."""
    suited = {p.domain for p in passages_for(m.id)}
    if len(suited) < MIN_DOMAINS:
        others = sorted(set(domains()) - suited)
        yield (f"passages of only {len(suited)} domains suit {m.id}; at least {MIN_DOMAINS} must",
               f"add \"{m.id}\" to the families of fitting passages of {MIN_DOMAINS - len(suited)} more domains "
               f"(such as {', '.join(others[:3])}) in setter/corpus/passages.json (CONTRIBUTING.md, 'Tagging corpus "
               "passages')")
