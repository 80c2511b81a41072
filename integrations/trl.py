"""TRL: environment classes for `GRPOTrainer(environment_factory=...)`, generated from environments.

TRL (1.16) probes one instance of each factory class: every public function of the class except `reset` and
`get_reward` is a tool, its JSON schema read by `transformers.utils.get_json_schema` from the type hints and the
Google-style docstring; `reset(**row)` receives the dataset row before each rollout. So each tool of the spec becomes
a method with typed parameters and a docstring carrying the tool's and each argument's description; the method calls
the environment and returns its JSON observation.

A dataset of many environments: TRL's dict form maps each row's `environment` column to a class, and gives every
distinct class that defines `get_reward` its own reward function, weight and logged metric (grpo_trainer.py): 180 rows
would be 180 reward columns. So the classes `environment_factories(rows)` makes define no `get_reward`; one reward
function, `env_score`, scores every rollout from its environment, and `grpo_arguments(rows)` hands TRL both. Tools
are read per class, so one class serves every row with the same tool set (the rows' `environment` column,
`tools-<digest>`); `reset(**row)` loads that row's environment. Environments rendered in different words have
different tools, so in practice a class serves the modes and re-plays of one environment, and the trainer sees each
row's own tools in its prompt.

    from integrations.trl import environment_class, grpo_arguments
    Env = environment_class(env)               # one environment (an Environment, or a spec and a mode), get_reward
    GRPOTrainer(model=..., train_dataset=rows, args=..., **grpo_arguments(rows))   # many: one reward, env_score

Each instance holds its own Environment; `reset` starts a fresh episode, so rollouts never share state. A tool
method's arguments (as TRL's parser made them) pass schemas.payload's guard, the one of every adapter, before the
environment sees them: an integer of any length, a value JSON has no type for or nesting too deep is the
environment's own error answer (a turn spent), never an exception TRL would report in its own words.
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Iterable
from typing import Any, Literal  # noqa: F401 - Literal is used by the generated source

from envs.environment import Environment
from integrations.completions import guarded_step
from integrations.rows import env_from_trainer_row, tool_interface, tools_json
from schemas.envspec import EnvSpec
from schemas.errors import UserError
from schemas.strict_json import dumps

RESERVED = {"reset", "get_reward", "score", "done", "env", "tools", "env_score"}  # the class's own attributes
_TYPES = {"integer": "int", "number": "float", "string": "str", "boolean": "bool", "object": "dict"}


class VhdTrlEnvironment:
    """The base of the generated classes: holds one episode of one environment (no `get_reward`: see the module)."""

    _spec_json: str = ""
    _mode: str = "hidden"
    _interface: str = ""  # the tool set's key (integrations.rows.tool_interface)
    _tool_names: dict[str, str] = {}  # method name -> tool name
    _arg_names: dict[str, dict[str, str]] = {}  # method name -> {parameter name -> tool argument name}

    def __init__(self) -> None:
        self.env = Environment(EnvSpec.model_validate_json(self._spec_json), self._mode)

    def reset(self, **row: Any) -> str | None:
        """A fresh episode; of the row's environment when the row carries a spec (an exported row), which must have
        this class's tools."""
        if "spec_json" in row or "extra_info" in row:
            env = env_from_trainer_row(row)
            if tool_interface(tools_json(env)) != self._interface:
                raise UserError(f"the row's environment {env.env_id} ({env.mode}) has other tools than this class "
                                f"({self.__class__.__name__}): use environment_factories(rows), keyed by the rows' "
                                "environment column, to map each row to its class")
            self.env = env
        self.env.reset()
        return None

    @property
    def done(self) -> bool:
        return self.env.done

    def _call(self, method: str, arguments: dict[str, Any]) -> str:
        names = self._arg_names[method]
        args = {names[key]: value for key, value in arguments.items() if value is not None}
        return dumps(guarded_step(self.env, self._tool_names[method], args), default=float)


class RewardedTrlEnvironment(VhdTrlEnvironment):
    """A class for one environment on its own: TRL reads its reward from `get_reward`."""

    def get_reward(self) -> float:
        """The episode's score: clip((u - u0) / (u* - u0), 0, 1)."""
        return self.env.score()


def env_score(environments: list[VhdTrlEnvironment] | None = None, **kwargs: Any) -> list[float | None]:
    """TRL's one reward function over rollouts of many environments: each rollout's environment score,
    clip((u - u0) / (u* - u0), 0, 1) (None for a rollout without one of our environments, which TRL ignores)."""
    return [e.env.score() if isinstance(e, VhdTrlEnvironment) else None for e in environments or []]


def _identifier(name: str, taken: set[str]) -> str:
    base = re.sub(r"\W", "_", name).strip("_") or "tool"
    if base[0].isdigit():
        base = f"t_{base}"
    if keyword.iskeyword(base) or base in RESERVED or base.startswith("_"):
        base = f"{base}_"
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}_{n}", n + 1
    taken.add(candidate)
    return candidate


def _one_line(text: str | None) -> str:
    return re.sub(r"\s+", " ", str(text or "")).strip()


def _python_type(schema: dict[str, Any]) -> str:
    if "enum" in schema and all(isinstance(v, str) for v in schema["enum"]):
        return f"Literal[{', '.join(repr(v) for v in schema['enum'])}]"
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items") or {}
        return f"list[{_python_type(items)}]" if items.get("type") in (*_TYPES, "array") else "list"
    if kind not in _TYPES:
        raise ValueError(f"a tool argument of JSON type {kind!r} has no Python type for TRL")
    return _TYPES[kind]


def _method_source(method: str, tool: dict[str, Any], arg_names: dict[str, str]) -> str:
    function = tool["function"]
    parameters = function.get("parameters") or {}
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    signature, docs, passed = ["self"], [], []
    ordered = sorted(arg_names, key=lambda a: arg_names[a] not in required)  # required first (Python's rule)
    for name in ordered:
        schema = properties[arg_names[name]]
        hint = _python_type(schema)
        signature.append(f"{name}: {hint}" if arg_names[name] in required else f"{name}: {hint} | None = None")
        # a "(choices: ...)" tail would be read as an enum by get_json_schema; the Literal hint carries it
        description = _one_line(schema.get("description")) or f"the {arg_names[name]} argument"
        bounds = [f"{word} {schema[key]}" for key, word in (("minimum", "at least"), ("maximum", "at most"),
                                                            ("minItems", "at least items:"),
                                                            ("maxItems", "at most items:")) if key in schema]
        if bounds:
            description += f" ({', '.join(bounds)})"
        docs.append(f"        {name}: {description.replace('(choices:', '(one of:')}")
        passed.append(f"{name!r}: {name}")
    summary = _one_line(function.get("description")) or function["name"]
    args_block = ("\n\n    Args:\n" + "\n".join(docs)) if docs else ""
    return (f"def {method}({', '.join(signature)}) -> str:\n"
            f'    """{_escape(summary)}{_escape(args_block)}\n\n    Returns:\n'
            f'        The observation as JSON.\n    """\n'
            f"    return self._call({method!r}, {{{', '.join(passed)}}})\n")


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')


def environment_class(env: Environment | EnvSpec, mode: str | None = None,
                      reward: bool = True) -> type[VhdTrlEnvironment]:
    """A TRL environment class for one environment in one mode: its tools as typed, documented methods; with
    `get_reward` unless `reward` is False (many classes share `env_score` instead: see the module)."""
    if isinstance(env, EnvSpec):
        env = Environment(env, mode or "hidden")
    elif mode is not None and mode != env.mode:
        env = Environment(env.spec, mode)
    tools = tools_json(env)
    taken: set[str] = set()
    namespace: dict[str, Any] = {"_spec_json": env.spec.model_dump_json(), "_mode": env.mode,
                                 "_interface": tool_interface(tools), "_tool_names": {}, "_arg_names": {}}
    for tool in json.loads(tools):
        name = tool["function"]["name"]
        method = _identifier(name, taken)
        properties = (tool["function"].get("parameters") or {}).get("properties") or {}
        arg_taken: set[str] = {"self"}
        arg_names = {_identifier(arg, arg_taken): arg for arg in properties}
        source = _method_source(method, tool, arg_names)
        scope: dict[str, Any] = {"Literal": Literal}
        exec(compile(source, f"<vhdplay tool {name}>", "exec"), scope)  # noqa: S102 - our own generated source
        namespace[method] = scope[method]
        namespace["_tool_names"][method] = name
        namespace["_arg_names"][method] = arg_names
    digest = namespace["_interface"].removeprefix("tools-")[:8]
    class_name = "Vhd" + "".join(part.title() for part in env.spec.family.split("_")) + f"_{env.mode}_{digest}"
    namespace["__doc__"] = f"{env.spec.family} environment {env.env_id} in {env.mode} mode (vhdplay)."
    return type(class_name, (RewardedTrlEnvironment if reward else VhdTrlEnvironment,), namespace)


def environment_factories(rows: Iterable[dict[str, Any]]) -> dict[str, type[VhdTrlEnvironment]]:
    """{row["environment"]: class} for TRL's dict `environment_factory` over a dataset of many environments (rows of
    `vhd export --format trl` or `hf`): one class per tool set, none with `get_reward` (score with `env_score`)."""
    factories: dict[str, type[VhdTrlEnvironment]] = {}
    for row in rows:
        key = row.get("environment")
        if key is None:
            raise UserError("a row has no 'environment' column; export with vhd export --format trl")
        if key not in factories:
            factories[key] = environment_class(env_from_trainer_row(row), reward=False)
    return factories


def grpo_arguments(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """`GRPOTrainer(..., **grpo_arguments(rows))`: the dict environment factory and the one reward function."""
    return {"environment_factory": environment_factories(rows), "reward_funcs": [env_score]}
