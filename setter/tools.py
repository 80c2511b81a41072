"""The tools every setter binds: one builder of a tool's argument schema, description and binding.

A setter chooses a tool's name (the template from the phrase file, the litellm setter from the model's draft) and may
choose its description and argument names; everything else (the JSON schema of the arguments with their bounds, the
decoy disclaimer, what a call spends, the binding to the operation) is built here, the same for every setter.
"""

from __future__ import annotations

import re

from mechanisms.base import Mechanism
from schemas.envspec import RUNTIME_OPERATIONS, ArgSpec, OperationSpec, ToolSpec
from setter.phrasebook import argument_description, argument_name, estimate_nouns, phrase, slug

# every call of every tool spends one turn of the budget, whatever it does (a refused call too)
SPENDS = " Each call spends one turn."
# a name a setter gives a tool or an argument: lower-case letters, digits and _, starting with a letter, at most 60
# (the length of a slug; admission allows 64)
MAX_NAME = 60
IDENTIFIER = re.compile(rf"^[a-z][a-z0-9_]{{0,{MAX_NAME - 1}}}$")


def bindable_operations(mechanism: Mechanism, params) -> list[OperationSpec]:
    """Every operation a tool may be bound to: the mechanism's and the runtime's."""
    return [*mechanism.operations(params), *RUNTIME_OPERATIONS]


def phrase_tool_name(family: str, operation: str, words: dict[str, str]) -> str:
    """The phrase file's name for the tool bound to an operation, in the passage's words (the operation's own name
    where the file has none)."""
    return slug(phrase(family, operation, operation)[0].format(**words))[:MAX_NAME]


def decoy_disclaimer(family: str, op: OperationSpec, description: str, names: dict[str, str],
                     words: dict[str, str]) -> str:
    """A decoy's description that names what it estimates (a model may leave it out; a phrase file says it)."""
    if not op.decoy or not op.estimates:
        return description
    nouns = estimate_nouns(family, op.estimates, words) or [names.get(op.estimates, op.estimates)]
    if any(noun.lower() in description.lower() for noun in nouns):
        return description
    return f"{description.rstrip()} It is an estimate of the {nouns[0]}, not the true figure."


def argument_bounds(arg: ArgSpec) -> dict:
    """The JSON-schema bounds of an argument (an array's bounds are its elements')."""
    element = arg.items if arg.type == "array" else arg.type
    bounds: dict = {}
    if arg.minimum is not None:
        bounds["minimum"] = arg.minimum if element == "number" else int(arg.minimum)
    if arg.maximum is not None:
        bounds["maximum"] = arg.maximum if element == "number" else int(arg.maximum)
    if arg.enum:
        bounds["enum"] = list(arg.enum)
    if arg.type != "array":
        return bounds
    array = {"items": {"type": element or "integer", **bounds}, "minItems": 1}
    if arg.max_items is not None:
        array["maxItems"] = arg.max_items
    return array


def argument_schema(arg: ArgSpec, description: str | None = None) -> dict:
    """The JSON schema of one argument: its type, description and bounds."""
    return {"type": arg.type, "description": arg.description if description is None else description,
            **argument_bounds(arg)}


def bind_tool(family: str, op: OperationSpec, name: str, description: str, words: dict[str, str],
              names: dict[str, str], renamed: dict[str, str] | None = None) -> ToolSpec:
    """The tool `name` bound to `op`, described by `description` plus the decoy disclaimer and what a call spends
    (`names`: the observation names in the passage's words). An argument is named `renamed[arg]` where the setter
    chose a name, else by the phrase file in the passage's words; ValueError when a name is not an identifier or two
    arguments get the same one."""
    arguments = {arg: (renamed or {}).get(arg) or slug(argument_name(family, arg, op.name).format(**words))
                 for arg in op.args}
    if any(not IDENTIFIER.match(n) for n in arguments.values()) or len(set(arguments.values())) != len(arguments):
        raise ValueError(f"tool {name!r} has invalid or repeated argument names {sorted(arguments.values())}")
    properties = {arguments[arg]: argument_schema(spec, argument_description(family, arg, spec.description or arg,
                                                                             op.name).format(**words))
                  for arg, spec in op.args.items()}
    parameters = {"type": "object", "properties": properties, "required": list(properties),
                  "additionalProperties": False}
    return ToolSpec(name=name, description=decoy_disclaimer(family, op, description, names, words) + SPENDS,
                    kind=op.kind, parameters=parameters, operation=op.name,
                    argument_map={tool_arg: arg for arg, tool_arg in arguments.items() if tool_arg != arg})
