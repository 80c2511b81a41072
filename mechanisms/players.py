"""Scripted players that know only what an agent could know.

A scripted player (the default that anchors u0, the informed agent, the naive prober, the heuristics) sits at a
:class:`Seat`: it sees the public structure of the instance (``Mechanism.public_view``: counts, horizon, bounds,
what every mode's text states) and the tools' schemas, and it learns the rest only from the observations of its
own calls, each of which spends a turn, as an agent's would. The seat holds no parameters: the only way from the
hidden instance to a player is an observation. A family's belief is built from a :class:`Knowledge` (the public
view, the operations and every call with its observation), never from the parameters.

- :func:`naive_prober` reads the posted sheets, verifies figures in listing order while the budget leaves room for
  the plan, then plays the plan solved on what it believes.
- :func:`informed` does the same in the family's value-of-information order (``Mechanism.probe_order``).
- :func:`run_policy` plays a policy on a fresh state and returns its calls and the utility reached: the calls,
  replayed through the hidden mode's tools, reach the same utility.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from mechanisms.arguments import ActionError
from mechanisms.canonical import canonical_actions, canonical_number
from mechanisms.operations import operation_calls
from schemas.envspec import Action, OperationSpec


class Mechanism(Protocol):
    """What a player uses of a family (mechanisms.base.Mechanism, which imports this module)."""

    def operations(self, params: Any) -> list[OperationSpec]: ...
    def public_view(self, params: Any) -> dict[str, Any]: ...
    def initial_state(self, params: Any) -> dict[str, Any]: ...
    def apply(self, params: Any, state: dict[str, Any], action: Action) -> Any: ...
    def finished(self, state: dict[str, Any]) -> bool: ...
    def utility(self, params: Any, state: dict[str, Any]) -> float: ...
    def believed(self, known: Knowledge) -> Any: ...
    def probe_order(self, known: Knowledge) -> list[Action]: ...
    def listing_order(self, known: Knowledge) -> list[Action]: ...
    def planned_calls(self, known: Knowledge, belief: Any) -> list[Action]: ...
    def act_on_belief(self, seat: Seat, belief: Any) -> None: ...

# how often a prober re-solves its belief to learn how many turns its plan needs (each solve is a full solve)
PLAN_SOLVES = 6


@dataclass
class Knowledge:
    """What a player knows: the public view, the tools' schemas and every call it made with what it saw."""

    public: dict[str, Any]
    operations: dict[str, OperationSpec]
    seen: list[tuple[Action, dict[str, Any]]] = field(default_factory=list)

    def observations(self, op: str) -> Iterator[tuple[Action, dict[str, Any]]]:
        """The calls of one operation that were answered (refused calls are left out), oldest first."""
        for action, observation in self.seen:
            if action.op == op and "error" not in observation:
                yield action, observation

    def latest(self, op: str) -> dict[str, Any] | None:
        """The newest answered observation of an operation (None when it was never called successfully)."""
        found = None
        for _, observation in self.observations(op):
            found = observation
        return found

    def called(self, action: Action) -> bool:
        op, args = action.op, action.args  # compared as plain data: pydantic's __eq__ is slow in a prober's loop
        return any(a.op == op and a.args == args for a, _ in self.seen)

    def kind(self, op: str) -> str | None:
        spec = self.operations.get(op)
        return spec.kind if spec is not None else None


class Seat:
    """A player's place at the table: call operations (each spends a turn), read what they answered.

    The seat is built around closures over the instance; it keeps no reference to the parameters a player could read.
    """

    def __init__(self, mechanism: Mechanism, params: Any, budget: int | None = None):
        state = mechanism.initial_state(params)

        def act(action: Action) -> dict[str, Any]:
            return mechanism.apply(params, state, action)

        self._act = act
        self._finished: Callable[[], bool] = lambda: mechanism.finished(state)
        self._utility: Callable[[], float] = lambda: mechanism.utility(params, state)  # for run_policy, not players
        self.known = Knowledge(mechanism.public_view(params), {op.name: op for op in mechanism.operations(params)})
        self.budget = budget
        self.turns = 0
        self.errors = 0
        self.calls: list[Action] = []

    @property
    def turns_left(self) -> float:
        return float("inf") if self.budget is None else self.budget - self.turns

    @property
    def over(self) -> bool:
        return self._finished() or self.turns_left <= 0

    def call(self, op: str | Action, **args: Any) -> dict[str, Any] | None:
        """Make one call (an Action, or an operation name and its arguments); returns its observation, or
        {"error": ...} when refused (the turn is spent, nothing changed), or None when the episode is over. A float
        argument is made canonical first (mechanisms.canonical): the calls recorded in a spec and their replay do not
        depend on the host's last bits."""
        action = canonical_actions([op if isinstance(op, Action) else Action(op=op, args=args)])[0]
        if self.over:
            return None
        self.turns += 1
        self.calls.append(action)
        try:
            observation = self._act(action)
        except ActionError as error:
            self.errors += 1
            observation = {"error": str(error)}
        self.known.seen.append((action, observation))
        return observation

    def play(self, actions: list[Action]) -> None:
        """Make the calls in order until the episode is over."""
        for action in actions:
            if self.over:
                return
            self.call(action)


Policy = Callable[[Seat], None]


def run_policy(mechanism: Mechanism, params: Any, policy: Policy, budget: int | None = None
               ) -> tuple[list[Action], float]:
    """Play `policy` on a fresh state within `budget` turns; (its calls, the utility reached: canonical, as a spec
    records utilities, mechanisms.canonical)."""
    seat = Seat(mechanism, params, budget)
    policy(seat)
    return seat.calls, canonical_number(seat._utility())


def sheet_calls(known: Knowledge) -> list[Action]:
    """The calls that show the posted figures (decoy operations that take no argument: one call, every figure)."""
    return [Action(op=op.name) for op in known.operations.values() if op.decoy and not op.args]


def read_sheets(seat: Seat) -> None:
    """Read every posted sheet once (a player that trusts or checks the posted figures starts here)."""
    for action in sheet_calls(seat.known):
        if not seat.known.called(action):
            seat.call(action)


def listing_calls(known: Knowledge) -> list[Action]:
    """Every probe call in listing order: each probe operation in the order the tools list them, each with every
    combination of its integer arguments, lowest first."""
    return [call for op in known.operations.values() if op.kind == "probe" for call in operation_calls("", op)]


def decisions(known: Knowledge, actions: list[Action]) -> list[Action]:
    """The decision and clock calls of a plan (what an agent who already knows the facts must still spend)."""
    return [a for a in actions if known.kind(a.op) in ("decision", "clock")]


def _key(action: Action) -> tuple:
    """An action as a hashable key (list arguments as tuples)."""
    return action.op, tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in action.args.items()))


def prober(mechanism: Mechanism, order: Callable[[Knowledge], list[Action]]) -> Policy:
    """A policy that reads the posted sheets, verifies figures in `order` while the turns leave room for its plan,
    re-solving its belief now and then to learn how long the plan is, then acts on what it believes. What a call shows
    may change what is worth verifying next, so the order is asked for again after the first verification and then
    each time an eighth of what was left has been verified."""

    def policy(seat: Seat) -> None:
        read_sheets(seat)
        made = {_key(action) for action, _ in seat.known.seen}
        queue: list[Action] = []
        since, every = 1, 1  # calls since the order was last asked for, and how many may pass before it is again

        def next_call() -> Action | None:
            nonlocal queue, since, every
            if since >= every:
                queue = [call for call in reversed(order(seat.known)) if _key(call) not in made]
                since, every = 0, max(1, len(queue) // 8)
            while queue and _key(queue[-1]) in made:
                queue.pop()
            return queue.pop() if queue else None

        def verify(call: Action) -> None:
            nonlocal since
            seat.call(call)
            made.add(_key(call))
            since += 1

        plan = mechanism.planned_calls(seat.known, mechanism.believed(seat.known))
        solves = 1
        call = next_call()
        while call is not None and not seat.over:
            room = seat.turns_left - len(plan)
            if room <= 0:
                if solves >= PLAN_SOLVES:
                    break
                plan, solves = mechanism.planned_calls(seat.known, mechanism.believed(seat.known)), solves + 1
                if seat.turns_left - len(plan) <= 0:
                    break
                continue
            for _ in range(int(room)):
                if call is None or seat.over:
                    break
                verify(call)
                call = next_call()
            if call is not None and solves < PLAN_SOLVES:
                plan, solves = mechanism.planned_calls(seat.known, mechanism.believed(seat.known)), solves + 1
        mechanism.act_on_belief(seat, mechanism.believed(seat.known))

    return policy


def informed(mechanism: Mechanism) -> Policy:
    """The informed agent: verifies figures in the family's value-of-information order."""
    return prober(mechanism, mechanism.probe_order)


def naive_prober(mechanism: Mechanism) -> Policy:
    """The naive prober: verifies figures in listing order."""
    return prober(mechanism, mechanism.listing_order)
