"""Operations as typed methods: a family's primitive operations, their tool schema and their argument checks, from
one place.

A family writes each operation once, as a method marked with its kind::

    Item = Annotated[int, Between(1, "items"), "item number"]  # 1..params.items, and what it is

    @probe
    def probe_value(self, p: KnapsackParams, state: State, item: Item) -> Observation:
        \"\"\"true value of one item\"\"\"
        return {"item": item, "value": p.values[item - 1]}

The docstring's first paragraph is the operation's summary; the annotations give the types (``int``, ``float``,
``list[int]``, ``list[float]``), :class:`Between` their bounds (each a number, the name of a parameter attribute, or
a function of the parameters) and a string what the argument is. An ``Args:`` section in the docstring describes an
argument for this operation only (as tau2-bench derives a tool from a function), over its type's description.
``{NAME}`` in a docstring is the module constant NAME. :meth:`Mechanism.operations` lists the
marked methods in the order the class defines them, and :meth:`Mechanism.apply` checks a call's arguments against
the same bounds (an :class:`~mechanisms.base.ActionError` before anything changes) and calls the method with them.
"""

from __future__ import annotations

import inspect
import itertools
import math
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin

from mechanisms.arguments import ActionError, _shown, require_int, require_int_list, require_number
from schemas.envspec import Action, ArgSpec, OperationSpec, ToolKind

Bound = float | int | str | Callable[[Any], float] | None
State = dict[str, Any]
Observation = dict[str, Any]


@dataclass(frozen=True)
class Between:
    """Inclusive bounds of an argument, or of each entry of a list argument (with its longest and shortest length
    and whether its entries must differ). A bound is a number, a parameter attribute's name, or a function of the
    parameters."""

    minimum: Bound = None
    maximum: Bound = None
    max_items: Bound = None
    distinct: bool = True
    min_items: Bound = None  # a list's shortest length (not in the tool schema: checked when a call is read)
    clip: bool = False  # a number above the maximum is lowered to it instead of refused


@dataclass(frozen=True)
class Mark:
    kind: ToolKind
    decoy: bool = False
    estimates: str | None = None  # a decoy's: the observation key of the true quantity it stands in for
    when: Callable[[Any], bool] | None = None  # offered only for parameters where this holds


def _marker(kind: ToolKind):
    def mark(method: Callable | None = None, *, decoy: bool = False, estimates: str | None = None,
             when: Callable[[Any], bool] | None = None):
        def marked(fn: Callable) -> Callable:
            fn.__operation__ = Mark(kind, decoy, estimates, when)
            return fn

        return marked(method) if method is not None else marked

    mark.__doc__ = f"Mark a method as a {kind} operation (``@{kind}`` or ``@{kind}(decoy=..., estimates=...)``)."
    return mark


probe = _marker("probe")
info = _marker("info")
decision = _marker("decision")
clock = _marker("clock")

_TYPES = {int: ("integer", None), float: ("number", None), list[int]: ("array", "integer"),
          list[float]: ("array", "number")}


def resolve(bound: Bound, params: Any) -> Any:
    if bound is None or isinstance(bound, (int, float)):
        return bound
    if isinstance(bound, str):
        return getattr(params, bound)
    return bound(params)


@dataclass(frozen=True)
class Argument:
    name: str
    type: str  # integer | number | array
    items: str | None
    description: str
    between: Between

    def spec(self, params: Any) -> ArgSpec:
        b = self.between
        return ArgSpec(type=self.type, description=self.description, minimum=resolve(b.minimum, params),
                       maximum=resolve(b.maximum, params), items=self.items,
                       max_items=resolve(b.max_items, params) if self.type == "array" else None)

    def read(self, params: Any, args: dict[str, Any]) -> Any:
        """The argument's value, checked against its bounds (ActionError with the problem otherwise)."""
        b = self.between
        low, high = resolve(b.minimum, params), resolve(b.maximum, params)
        if self.type == "integer":
            return require_int(args, self.name, low, high)
        if self.items == "integer":
            values = require_int_list(args, self.name, low, high, b.distinct)
        else:
            low = -math.inf if low is None else low
            ceiling = math.inf if high is None or b.clip else high  # with clip, a number above the maximum is read
            top = math.inf if high is None else high
            if self.type == "number":
                return min(require_number(args, self.name, low, ceiling), top)
            values = args.get(self.name)
            if not isinstance(values, list) or not values:
                raise ActionError(f"argument {self.name!r} must be a non-empty list of numbers, got {_shown(values)}")
            values = [min(require_number({self.name: v}, self.name, low, ceiling), top) for v in values]
        shortest, longest = resolve(b.min_items, params), resolve(b.max_items, params)
        if longest is not None and len(values) > longest:
            raise ActionError(f"argument {self.name!r} lists {len(values)} entries; at most {longest} are allowed")
        if shortest is not None and len(values) < shortest:
            raise ActionError(f"argument {self.name!r} lists {len(values)} entries; at least {shortest} are needed")
        return values


@dataclass(frozen=True)
class Operation:
    """One marked method: its name, mark, summary and arguments (called as ``method(self, params, state, **args)``)."""

    name: str
    method: Callable
    mark: Mark
    summary: str
    arguments: tuple[Argument, ...]

    def spec(self, params: Any) -> OperationSpec:
        return OperationSpec(name=self.name, kind=self.mark.kind, summary=self.summary,
                             args={a.name: a.spec(params) for a in self.arguments}, decoy=self.mark.decoy,
                             estimates=self.mark.estimates)

    def offered(self, params: Any) -> bool:
        return self.mark.when is None or bool(self.mark.when(params))

    def call(self, mechanism: Any, params: Any, state: State, args: dict[str, Any]) -> Observation:
        values = {a.name: a.read(params, args) for a in self.arguments}
        return self.method(mechanism, params, state, **values)


def parse_docstring(doc: str, constants: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """The summary (the first paragraph as one line) and each argument's description (its ``Args:`` entry, continued
    on more deeply indented lines)."""
    text = inspect.cleandoc(doc or "")
    if "{" in text:
        text = text.format_map(constants)
    head, _, section = text.partition("\nArgs:\n") if not text.startswith("Args:\n") else ("", "", text[6:])
    summary = " ".join(head.strip().split("\n\n")[0].split())
    lines = [line for line in section.splitlines() if line.strip()]
    indent = min((len(line) - len(line.lstrip()) for line in lines), default=0)
    described: dict[str, list[str]] = {}
    for line in lines:
        entry = re.match(r"(\w+):\s*(.*)$", line[indent:]) if len(line) - len(line.lstrip()) == indent else None
        if entry:
            described[entry.group(1)] = [entry.group(2)]
        elif described:
            described[list(described)[-1]].append(line.strip())
    return summary, {name: " ".join(words).strip() for name, words in described.items()}


def read_operation(name: str, method: Callable) -> Operation:
    """The operation a marked method declares; TypeError names what it lacks (its docstring or an annotation)."""
    where = f"{method.__qualname__}"
    summary, descriptions = parse_docstring(method.__doc__ or "", method.__globals__)
    if not summary:
        raise TypeError(f"operation {where} needs a docstring: its first line is the tool's summary")
    parameters = list(inspect.signature(method).parameters.values())
    if len(parameters) < 3 or [p.name for p in parameters[:1]] != ["self"]:
        raise TypeError(f"operation {where} must take (self, params, state, ...arguments)")
    arguments = []
    for parameter in parameters[3:]:
        annotation = parameter.annotation
        if isinstance(annotation, str):
            annotation = eval(annotation, method.__globals__, vars(typing))  # noqa: S307 - the family's own source
        between, described = Between(), ""
        if get_origin(annotation) is Annotated:
            annotation, *extras = get_args(annotation)
            between = next((e for e in extras if isinstance(e, Between)), between)
            described = next((e for e in extras if isinstance(e, str)), described)
        if annotation not in _TYPES:
            raise TypeError(f"operation {where}: argument {parameter.name!r} must be int, float, list[int] or "
                            f"list[float], got {annotation!r}")
        kind, items = _TYPES[annotation]
        arguments.append(Argument(parameter.name, kind, items, descriptions.get(parameter.name, described), between))
    return Operation(name, method, method.__operation__, summary, tuple(arguments))


def collect_operations(cls: type) -> dict[str, Operation]:
    """The marked methods of a class and its bases, in definition order (a base's first), by name."""
    table: dict[str, Operation] = {}
    for klass in reversed(cls.__mro__):
        for name, member in vars(klass).items():
            if callable(member) and hasattr(member, "__operation__"):
                table.pop(name, None)
                table[name] = read_operation(name, member)
    return table


def operation_calls(family: str, op: OperationSpec) -> list[Action]:
    """Every call of an operation: each combination of its integer arguments' values (a probe order's default)."""
    ranges = []
    for name, arg in op.args.items():
        if arg.type != "integer" or arg.minimum is None or arg.maximum is None:
            raise ValueError(f"{family}.{op.name} takes a non-integer argument {name!r}: the family's probe_order "
                             "must list its calls")
        ranges.append([(name, v) for v in range(int(arg.minimum), int(arg.maximum) + 1)])
    return [Action(op=op.name, args=dict(combo)) for combo in itertools.product(*ranges)]
