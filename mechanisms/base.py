"""The mechanism contract: parameters, exact solver, dynamics as primitive operations, policies.

A family is one file in this package that subclasses :class:`Mechanism` and calls
:func:`mechanisms.registry.register`. Utilities are "higher is better". Dynamics are deterministic
given the parameters, so replaying the optimal actions reproduces u* exactly.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from mechanisms.arguments import (  # noqa: F401 - re-exported: families read their arguments through base
    ActionError,
    _shown,
    require_int,
    require_int_list,
    require_number,
)
from mechanisms.canonical import canonical_actions, canonical_data, canonical_number
from mechanisms.facts import Fact, stated
from mechanisms.operations import Operation, collect_operations, operation_calls  # noqa: F401 - re-exported
from mechanisms.players import Knowledge, Policy, Seat, decisions, listing_calls, run_policy
from mechanisms.threads import single_threaded
from schemas.envspec import Action, OperationSpec, pickled_actions, unpickled_actions
from schemas.errors import UserError
from schemas.tiers import TIERS  # noqa: F401 - re-exported: the tiers belong with Tier

P = TypeVar("P", bound=BaseModel)


STICKER_REDRAWS = 24  # how often a sampler redraws stickers that would make the default policy (near-)optimal
NEAR_OPTIMAL = 0.97  # ... the share of the optimum (or of the way from idle to it) that counts as near

# the name under which the sequential families record the optimal online policy below the hindsight ceiling
ONLINE_BASELINE = "online_optimal"


class ParamsError(UserError):
    """Parameters given as data that do not describe a valid instance (one line: the field and the problem)."""


def describe_validation_error(family: str, error: ValidationError) -> str:
    """pydantic's multi-line report as one line: `family parameters: field: problem; field: problem`."""
    problems = []
    for item in error.errors()[:3]:
        where = ".".join(str(part) for part in item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        problems.append(f"{where}: {message}" if where else message)
    more = len(error.errors()) - len(problems)
    suffix = f" (and {more} more)" if more > 0 else ""
    return f"bad {family} parameters: " + "; ".join(problems) + suffix


@dataclass
class Solution:
    """The exact reference: u*, the actions that reach it, and what the solver found (`facts`: the answer's parts,
    which the spec records) and how it got there (`diagnostics`: iterations, statuses, residuals, the method that
    succeeded; they may differ with the host, so the spec never records them: mechanisms.canonical)."""

    u_star: float
    optimal_actions: list[Action]
    solver: str
    facts: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)

    def __reduce__(self):  # actions pickled as plain data (see schemas.envspec.pickled_actions)
        return (_solution, (self.u_star, pickled_actions(self.optimal_actions), self.solver, self.facts,
                            self.diagnostics))


def _solution(u_star: float, actions: list[dict[str, Any]], solver: str, facts: dict[str, Any],
              diagnostics: dict[str, Any] | None = None) -> Solution:
    return Solution(u_star, unpickled_actions(actions), solver, facts, diagnostics or {})


def _outcome(solution: Solution, default: list[dict[str, Any]], u0: float, u_idle: float,
             baselines: dict[str, float]) -> Outcome:
    return Outcome(solution, unpickled_actions(default), u0, u_idle, baselines)


@dataclass
class Outcome:
    """Everything the factory needs about one solved instance."""

    solution: Solution
    default_actions: list[Action]
    u0: float
    u_idle: float
    # further policies worth scoring against the reference, by name: utility reached (for the
    # sequential families, the Bellman- or Weitzman-optimal online policy below the hindsight ceiling)
    baselines: dict[str, float] = field(default_factory=dict)

    def __reduce__(self):  # actions pickled as plain data (see schemas.envspec.pickled_actions)
        return (_outcome, (self.solution, pickled_actions(self.default_actions), self.u0, self.u_idle, self.baselines))


@dataclass(frozen=True)
class Tier:
    """One difficulty tier of a family: the size x horizon cells it draws and the share of the probe allowance
    its turn budget grants (1.0: every probe fits beside the longest plan; less: the agent must choose)."""

    grid: tuple[tuple[int, int], ...]
    probe_share: float = 1.0


# A plan may ask for one tier (`vhd generate --difficulty hard`); every environment is labelled with the tier its
# measured quantities put it in (envs.difficulty).


# Solutions remembered while a `remembered_solutions()` block runs: a sampler that solves to judge its draw (is the
# default policy far enough from the optimum?) leaves the solution for the reference computed after it.
_REMEMBERED: ContextVar[Remembered | None] = ContextVar("remembered_solutions", default=None)


class Remembered(dict):
    """The solutions solved in a `remembered_solutions()` block, by (family, parameters as JSON)."""

    def solution(self, family: str, params: BaseModel) -> Solution | None:
        """The solution of `params` if it was solved in the block (else None)."""
        return self.get((family, params.model_dump_json()))


@contextmanager
def remembered_solutions() -> Iterator[Remembered]:
    """Within the block, solving the same parameters twice solves them once (solutions are read, never changed);
    yields what was solved, so that a caller can hand a sampler's solution on (tasks.sample)."""
    memory = Remembered()
    token = _REMEMBERED.set(memory)
    try:
        yield memory
    finally:
        _REMEMBERED.reset(token)


# Parameters read while a `parsed_once()` block runs, by the identity of their data (held, so that the identity stays
# theirs), and the operations of parameters listed in it, by the identity of the parameters.
_PARSED: ContextVar[dict[tuple[str, int], tuple[Any, Any]] | None] = ContextVar("parsed_once", default=None)


@contextmanager
def parsed_once() -> Iterator[None]:
    """Within the block, the same parameter data (the same dict) is validated once and the same parameters'
    operations are listed once: a checker that reads one spec in many places pays for it once. The data must not
    change inside the block (parameters are frozen; their data is read, never written)."""
    outer = _PARSED.get()
    token = _PARSED.set({} if outer is None else outer)  # a block inside another shares its memory
    try:
        yield
    finally:
        _PARSED.reset(token)


def _parsed(kind: str, source: Any, make: Callable[[], Any]) -> Any:
    memory = _PARSED.get()
    if memory is None:
        return make()
    key = (kind, id(source))
    hit = memory.get(key)
    if hit is None or hit[0] is not source:
        hit = memory[key] = (source, make())
    return hit[1]


def _canonical(solve: Callable[[Any, Any], Solution]) -> Callable[[Any, Any], Solution]:
    """Every family's `solve`: run with one BLAS thread (mechanisms.threads), its output made canonical
    (Mechanism.canonical_solution), remembered inside a `remembered_solutions()` block."""

    def solved(self, params):
        with single_threaded():
            solution = solve(self, params)
        return self.canonical_solution(params, solution)

    @functools.wraps(solve)
    def remembered(self, params):
        memory = _REMEMBERED.get()
        if memory is None:
            return solved(self, params)
        key = (self.id, params.model_dump_json())
        if key not in memory:
            memory[key] = solved(self, params)
        return memory[key]

    return remembered


class Mechanism(ABC, Generic[P]):
    """One mechanism family. Subclasses set the class attributes and implement the methods."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "solve" in cls.__dict__ and not getattr(cls.__dict__["solve"], "__isabstractmethod__", False):
            cls.solve = _canonical(cls.__dict__["solve"])

    id: ClassVar[str]
    version: ClassVar[int]
    group: ClassVar[str]  # trained | near_ood | far_ood_structure | far_ood_probe | external
    summary: ClassVar[str]
    Params: ClassVar[type[BaseModel]]
    size_range: ClassVar[tuple[int, int]]  # inclusive range of the size knob
    horizon_range: ClassVar[tuple[int, int]]  # inclusive range of the horizon knob
    default_size: ClassVar[int]
    default_horizon: ClassVar[int]
    # C2 admission band on the default policy's position g = (u0 - u_idle) / (u* - u_idle):
    # below the band the default is hopeless (worse than doing nothing by far), above it the
    # instance is trivial (the default is already near-optimal).
    u0_band: ClassVar[tuple[float, float]]
    # turns beyond the longest reference plan and the probe allowance; the far-OOD probe families keep it
    # at 1 so that probing everything does not fit the budget
    turn_slack: ClassVar[int] = 5

    # --- parameters -----------------------------------------------------------------------
    @abstractmethod
    def sample(self, rng: np.random.Generator, size: int, horizon: int) -> P:
        """Draw parameters (all randomness, including hidden paths, is drawn here)."""

    def redraw(self, params: P, rng: np.random.Generator) -> P | None:
        """The same instance with its random draws (the hidden path an episode realises: offers, prizes) drawn anew
        from the same distributions, everything else unchanged; None (the default) when the family has no random
        draws. envs.difficulty measures a family that redraws in expectation over its paths."""
        return None

    def params_from_data(self, data: dict[str, Any]) -> P:
        """Build parameters from explicit data (pydantic validates shapes and signs); ParamsError if invalid."""
        if not isinstance(data, dict):
            raise ParamsError(f"bad {self.id} parameters: expected a JSON object of fields, got {type(data).__name__}")
        return _parsed(f"{self.id} parameters", data, lambda: self._validated(data))

    def _validated(self, data: dict[str, Any]) -> P:
        try:
            return self.Params.model_validate(data)  # type: ignore[return-value]
        except ValidationError as error:
            raise ParamsError(describe_validation_error(self.id, error)) from None

    # --- reference ------------------------------------------------------------------------
    def with_misleading_stickers(self, draw: Callable[[], P], misleading: Callable[[float, float, P], bool],
                                 redraws: int = STICKER_REDRAWS) -> P:
        """Parameters from `draw()` (which draws the stickers anew each call, the truth fixed), redrawn up to `redraws`
        times while `misleading(u0, u_star, params)` is false: an instance whose stickers lead the default policy to
        (near) the optimum teaches nothing. The truth is solved once (stickers do not change it)."""
        params = draw()
        u_star = self.solve(params).u_star
        for _ in range(redraws):
            if misleading(run_policy(self, params, self.default_policy)[1], u_star, params):
                break
            params = draw()
        return params

    @abstractmethod
    def solve(self, params: P) -> Solution:
        """Exact full-information optimum and the actions that reach it."""

    @abstractmethod
    def default_policy(self, seat: Seat) -> None:
        """The default policy (it anchors u0): reads the posted figures, trusts them, splits budgets evenly, never
        verifies a figure. It plays at a seat (mechanisms.players): it knows what its calls showed, nothing else."""

    def default_actions(self, params: P) -> list[Action]:
        """The default policy's calls on these parameters (played without a turn limit)."""
        return run_policy(self, params, self.default_policy)[0]

    def idle_actions(self, params: P) -> list[Action]:
        """The idle policy: does nothing and ends the episode."""
        return [Action(op="finish")]

    def baseline_actions(self, params: P) -> dict[str, list[Action]]:
        """Further named policies to record with the reference (e.g. the optimal online policy)."""
        return {}

    # --- dynamics -------------------------------------------------------------------------
    # The primitive operations are the family's methods marked @probe, @info, @decision or @clock
    # (mechanisms.operations): their signatures and docstrings give the tool schema and the argument checks.
    @classmethod
    def operation_table(cls) -> dict[str, Operation]:
        """The family's operations by name, in definition order (read from its marked methods once)."""
        table = cls.__dict__.get("_operations")
        if table is None:
            table = collect_operations(cls)
            cls._operations = table
        return table

    def operations(self, params: P) -> list[OperationSpec]:
        """The primitive operations tools may be bound to (argument bounds may depend on params)."""
        return list(_parsed(f"{self.id} operations", params, lambda: tuple(
            op.spec(params) for op in self.operation_table().values() if op.offered(params))))

    @abstractmethod
    def initial_state(self, params: P) -> dict[str, Any]:
        """A fresh, JSON-serialisable state."""

    def apply(self, params: P, state: dict[str, Any], action: Action) -> dict[str, Any]:
        """Apply one action in place and return the observation; raise ActionError before mutating (its arguments
        are checked against the operation's bounds before its method runs)."""
        operation = self.operation_table().get(action.op)
        if operation is None or not operation.offered(params):
            raise ActionError(f"unknown operation {action.op!r}")
        return operation.call(self, params, state, action.args)

    @abstractmethod
    def utility(self, params: P, state: dict[str, Any]) -> float:
        """Utility of the state as if the episode ended now (the rest played idle)."""

    def finished(self, state: dict[str, Any]) -> bool:
        return bool(state.get("finished"))

    # --- rendering facts ------------------------------------------------------------------
    def describe(self, params: P, vocab: dict[str, str]) -> str:
        """The whole instance as text, in the passage's vocabulary (written and revealed modes): every fact."""
        return stated(self.facts(params, vocab))

    @abstractmethod
    def facts(self, params: P, vocab: dict[str, str]) -> list[Fact]:
        """What an agent needs to know, each fact once (see mechanisms.facts): the parameters with the probe that
        reveals them, and the rules (the objective formula, how the episode ends, what happens when the turns run
        out) that every mode states."""

    @abstractmethod
    def secret_numbers(self, params: P) -> list[float]:
        """Parameter values that must never appear in hidden-mode text."""

    def public_numbers(self, params: P) -> list[float]:
        """Structural numbers the hidden mode may show (horizon, item count, argument bounds)."""
        return []

    def probe_allowance(self, params: P) -> int:
        """Turns a careful agent needs for probing everything once (added to the turn budget)."""
        return sum(1 for op in self.operations(params) if op.kind == "probe")

    def grid(self) -> list[tuple[int, int]]:
        """The size x horizon cells a plan cycles through (difficulty knobs)."""
        return list(getattr(self, "difficulty_grid", [(self.default_size, self.default_horizon)]))

    def tiers(self) -> dict[str, Tier]:
        """The family's difficulty tiers (TIERS): cells and probe share. Families override with bigger cells."""
        declared = getattr(self, "difficulty_tiers", None)
        if declared:
            return dict(declared)
        cells = tuple(self.grid())
        return {"easy": Tier(cells, 1.0), "medium": Tier(cells, 1.0), "hard": Tier(cells, 0.5),
                "frontier": Tier(cells, 0.25)}

    # --- players: what an agent can know (mechanisms.players) -----------------------------------
    def public_view(self, params: P) -> dict[str, Any]:
        """What every mode tells an agent before any call, as data: the structure (counts, the horizon, bounds, rules'
        numbers). Only public numbers (admission's leak check reads it like the hidden text)."""
        return {}

    def knowledge(self, params: P) -> Knowledge:
        """What an agent knows before its first call: the public view and the tools' schemas."""
        return Knowledge(self.public_view(params), {op.name: op for op in self.operations(params)})

    @abstractmethod
    def believed(self, known: Knowledge) -> P:
        """The parameters as an agent believes them from what it knows (the public view and its calls'
        observations): a verified figure is true, a posted one is what the sheet said, the rest a guess from the
        public structure. It never sees the hidden parameters."""

    def listing_order(self, known: Knowledge) -> list[Action]:
        """Every probe call in the order the tools list them (what the naive prober verifies, first to last)."""
        return listing_calls(known)

    def probe_order(self, known: Knowledge) -> list[Action]:
        """Every probe call worth making, most valuable first, judged from what is known (the posted sheets are read
        before it is asked): the informed agent verifies as long a prefix as its budget allows."""
        return self.listing_order(known)

    def planned_calls(self, known: Knowledge, belief: P) -> list[Action]:
        """The calls an agent holding this belief would make to act (their count is what a prober reserves)."""
        return decisions(known, self.solve(belief).optimal_actions)

    def act_on_belief(self, seat: Seat, belief: P) -> None:
        """Act on a belief until the episode ends (the default: play the plan solved on it; a sequential family
        reacts to what each step shows)."""
        seat.play(self.planned_calls(seat.known, belief))

    def heuristic_policies(self) -> dict[str, Policy]:
        """Cheap policies a naive agent would follow (greedy, myopic, nearest neighbour), by name. Each plays at a
        seat (it knows what its calls showed) within the turn budget."""
        return {}

    def ledger(self, params: P, state: dict[str, Any]) -> dict[str, Any]:
        """The outcome as a ledger states it when the episode ends: the objective value and its parts. The
        environment shows it with whatever call ends the episode."""
        return {"result": self.utility(params, state)}

    def play(self, params: P, actions: list[Action], budget: int | None = None) -> tuple[float, int, int]:
        """Replay actions as an agent would: each call spends a turn, a refused call is an error that changes
        nothing, the episode ends when it finishes or the turns run out. Returns (utility, turns, errors): the
        utility canonical (mechanisms.canonical)."""
        state = self.initial_state(params)
        turns = errors = 0
        for action in actions:
            if self.finished(state) or (budget is not None and turns >= budget):
                break
            turns += 1
            try:
                self.apply(params, state, action)
            except ActionError:
                errors += 1
        return canonical_number(self.utility(params, state)), turns, errors

    # --- convenience ----------------------------------------------------------------------
    def run(self, params: P, actions: list[Action]) -> float:
        """Replay actions on a fresh state directly (no tools) and return the utility (canonical, as the spec records
        utilities: mechanisms.canonical)."""
        state = self.initial_state(params)
        for action in actions:
            if self.finished(state):
                break
            self.apply(params, state, action)
        return canonical_number(self.utility(params, state))

    def outcome(self, params: P, solution: Solution | None = None) -> Outcome:
        """The reference of `params`: its solution (solved here unless given: the sampler may have solved it), the
        default and idle policies' utilities and the baselines' (canonical, as run and run_policy give them)."""
        solution = self.solve(params) if solution is None else solution
        default, u0 = run_policy(self, params, self.default_policy)
        return Outcome(
            solution=solution,
            default_actions=default,
            u0=u0,
            u_idle=self.run(params, self.idle_actions(params)),
            baselines={name: self.run(params, actions) for name, actions in self.baseline_actions(params).items()},
        )

    def canonical_solution(self, params: P, solution: Solution) -> Solution:
        """`solution` as the spec records it (mechanisms.canonical): float arguments of the optimal actions rounded
        toward zero and u* replayed from them, u* and the facts rounded. Actions that the rounding would break (a
        refused call, or a replay off u* by more than 1e-9 relative: a plan whose order matters under negative
        coefficients) are kept as solved."""
        actions, u_star = canonical_actions(solution.optimal_actions), solution.u_star
        if actions is not solution.optimal_actions:
            replayed, _, errors = self.play(params, actions)
            if errors == 0 and abs(replayed - u_star) <= 1e-9 * max(1.0, abs(u_star)):
                u_star = replayed
            else:
                actions = solution.optimal_actions
        return Solution(canonical_number(u_star), actions, solution.solver, canonical_data(solution.facts),
                        solution.diagnostics)

    def operation(self, params: P, name: str) -> OperationSpec:
        for op in self.operations(params):
            if op.name == name:
                return op
        raise ActionError(f"unknown operation {name!r}")


