"""The prose lint: everything an agent sees reads as one story in its passage's words.

It refuses an environment whose text, tools or observations
- contain a generic template word (``item``, ``box``, ``prize``, ``customer``, ...) that is not the passage's own
  word for what this family names;
- contain a word of another family's vocabulary (the passage's words for things this family never names);
- show an internal identifier (an observation key or string value the rendering does not name);
- have a decoy whose description does not name the quantity it estimates;
- have a tool whose description does not say what a call spends.

The observations linted are those of every probe and info call on a fresh state and of the oracle's, the default's
and the informed agent's plays in hidden mode, as the agent sees them (renamed by the rendering).
"""

from __future__ import annotations

import re
from typing import Any

import mechanisms
from envs.agents import play
from envs.completeness import bound_observations
from envs.environment import Environment, shown
from schemas.envspec import EnvSpec
from setter.wording import TEMPLATE_WORDS, first_wording_problem

# what the generic template and the mechanisms call things; a passage's own words replace them
GENERIC_WORDS = TEMPLATE_WORDS
# keys the runtime itself shows, whatever the family
RUNTIME_KEYS = frozenset({"error", "result", "turns_left", "accepted_steps", "finished", "outcome", "episode over"})
SPENDS_PHRASE = "spends one turn"
_PLAIN = frozenset({int, float, bool, type(None)})


class LintError(ValueError):
    """One prose defect, in one line."""


def visible_observations(spec: EnvSpec, observations: dict[str, list[Any]] | None = None,
                         trajectories: list[list[dict[str, Any]]] | None = None) -> list[Any]:
    """What an agent can see, renamed as the rendering shows it: every probe and info call on a fresh state
    (envs.completeness.bound_observations, when not given) and the hidden-mode plays of the oracle, the default and
    the informed agent (played here when not given)."""
    names = spec.rendering.observation_names
    observations = bound_observations(spec) if observations is None else observations
    seen = [shown(observation, names) for calls in observations.values() for observation in calls]
    if trajectories is None:
        env = Environment(spec, "hidden")
        trajectories = [play(env, agent).trajectory for agent in ("oracle", "default", "informed")]
    seen.extend(step["result"] for trajectory in trajectories for step in trajectory)
    return seen


def _keys_and_strings(observation: Any, keys: list[str], strings: list[str]) -> None:
    if isinstance(observation, dict):
        for key, value in observation.items():
            keys.append(str(key))
            _keys_and_strings(value, keys, strings)
    elif isinstance(observation, list):
        if _PLAIN.issuperset(map(type, observation)):  # a row of numbers: no key, no string
            return
        for value in observation:
            _keys_and_strings(value, keys, strings)
    elif isinstance(observation, str):
        strings.append(observation)


def lint(spec: EnvSpec, observations: dict[str, list[Any]] | None = None,
         trajectories: list[list[dict[str, Any]]] | None = None) -> None:
    """Raise LintError with the first defect found (see visible_observations for the optional arguments)."""
    mechanism = mechanisms.get(spec.family)
    rendering = spec.rendering
    names = rendering.observation_names
    texts = {f"the {mode} instructions": text for mode, text in rendering.instructions.items()}
    texts["the written prompt"] = rendering.written_prompt
    texts["the title"] = rendering.title
    for tool in rendering.tools:
        if tool.operation in ("calculator", "turns_left"):
            continue
        texts[f"tool {tool.name!r}"] = f"{tool.name} {tool.description}"
        for arg, schema in tool.parameters.get("properties", {}).items():
            texts[f"argument {arg!r} of {tool.name!r}"] = f"{arg} {schema.get('description', '')}"
        if SPENDS_PHRASE not in tool.description.lower():
            raise LintError(f"the description of {tool.name!r} does not say what a call spends")
    keys: list[str] = []
    strings: list[str] = []
    for observation in visible_observations(spec, observations, trajectories):
        _keys_and_strings(observation, keys, strings)
    shown_names = set(names.values())
    for key in dict.fromkeys(keys):
        base = re.sub(r" \d+$", "", key)
        if key in RUNTIME_KEYS or key in shown_names or base in shown_names or key.isdigit():
            continue
        raise LintError(f"an observation shows the internal key {key!r}; name it in the family's phrase file")
    for value in dict.fromkeys(strings):
        if value.startswith(tuple(shown_names)) or " " in value.strip() and "_" not in value:
            continue  # prose (an error message, a status sentence) is linted for words below
        if "_" in value or value in GENERIC_WORDS:
            raise LintError(f"an observation shows the internal value {value!r}; name it in the family's phrase "
                            "file")
    texts["the observations"] = " ".join([*dict.fromkeys(keys), *dict.fromkeys(strings)])
    found = first_wording_problem(spec.family, spec.rendering.passage_id, texts)
    if found:
        raise LintError(" ".join(found))
    operations = {op.name: op for op in mechanism.operations(mechanism.params_from_data(spec.params))}
    for tool in rendering.tools:
        op = operations.get(tool.operation)
        if op is None or not op.decoy:
            continue
        estimated = names.get(op.estimates or "", op.estimates or "")
        if not op.estimates or estimated.lower() not in tool.description.lower():
            raise LintError(f"the decoy {tool.name!r} does not say that it estimates "
                            f"{estimated or 'a named quantity'}")
