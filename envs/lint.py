"""The prose lint: everything an agent sees reads as one story in its passage's words.

It refuses an environment whose text, tools or observations
- contain a generic template word (``item``, ``box``, ``prize``, ``customer``, ...) that is not the passage's own
  word for what this family names;
- contain a word of another family's vocabulary (the passage's words for things this family never names);
- show an internal identifier (an observation key or string value the rendering does not name);
- name a persona, source, supplier or counterpart of another story of the corpus;
- have a decoy whose name, description or observation does not name the quantity it estimates (the phrase file's
  `estimates` nouns), or whose observation does not name who posts it;
- have a tool whose description does not say what a call spends;
- write "a" before a vowel sound (or "an" before a consonant sound), "(s)" or "numbered 1 to 1";
- print a figure with float residue ("96.0", "160.20000000000002"), in a text or an observation;
- number something in the observations ("kitting table hour 3") more often than the rules ever count.

The observations linted are those of every probe and info call on a fresh state and of the oracle's, the default's
and the informed agent's plays in hidden mode, as the agent sees them (renamed by the rendering).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import mechanisms
from envs.agents import play
from envs.completeness import bound_observations
from envs.environment import Environment, shown
from mechanisms.facts import stated
from schemas.envspec import EnvSpec
from setter.corpus import passage_vocabulary
from setter.grammar import article_problem, number_residue, party_problem, plural_problem, residue_problem
from setter.phrasebook import estimate_nouns, vocabulary
from setter.wording import TEMPLATE_WORDS, first_wording_problem, words_of

# what the generic template and the mechanisms call things; a passage's own words replace them
GENERIC_WORDS = TEMPLATE_WORDS
# keys the runtime itself shows, whatever the family
RUNTIME_KEYS = frozenset({"error", "result", "turns_left", "accepted_steps", "finished", "outcome", "episode over"})
SPENDS_PHRASE = "spends one turn"
_PLAIN = frozenset({int, float, bool, type(None)})


class LintError(ValueError):
    """One prose defect, in one line; `kind` is one of DEFECT_KINDS."""

    def __init__(self, message: str, kind: str = "wording"):
        super().__init__(message)
        self.kind = kind


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


def _keys_and_strings(observation: Any, keys: list[str], strings: list[str], numbers: list[float]) -> None:
    if isinstance(observation, dict):
        for key, value in observation.items():
            keys.append(str(key))
            _keys_and_strings(value, keys, strings, numbers)
    elif isinstance(observation, list):
        for value in observation:
            _keys_and_strings(value, keys, strings, numbers)
    elif isinstance(observation, str):
        strings.append(observation)
    elif isinstance(observation, float):
        numbers.append(observation)


DEFECT_KINDS = ("spends", "internal_key", "internal_value", "wording", "foreign_party", "decoy_label", "article",
                "plural", "residue", "count")


def lint(spec: EnvSpec, observations: dict[str, list[Any]] | None = None,
         trajectories: list[list[dict[str, Any]]] | None = None) -> None:
    """Raise LintError with the first defect found (see visible_observations for the optional arguments)."""
    for kind, message in defects(spec, observations, trajectories):
        raise LintError(message, kind)


def defects(spec: EnvSpec, observations: dict[str, list[Any]] | None = None,
            trajectories: list[list[dict[str, Any]]] | None = None) -> Iterator[tuple[str, str]]:
    """Every prose defect of the environment as (its kind, one line), in DEFECT_KINDS order within each text."""
    mechanism = mechanisms.get(spec.family)
    rendering = spec.rendering
    names = rendering.observation_names
    prose = {f"the {mode} instructions": text for mode, text in rendering.instructions.items()}
    prose["the written prompt"] = rendering.written_prompt
    prose["the title"] = rendering.title
    texts = dict(prose)
    for tool in rendering.tools:
        if tool.operation in ("calculator", "turns_left"):
            continue
        texts[f"tool {tool.name!r}"] = f"{tool.name} {tool.description}"
        prose[f"the description of {tool.name!r}"] = tool.description
        for arg, schema in tool.parameters.get("properties", {}).items():
            texts[f"argument {arg!r} of {tool.name!r}"] = f"{arg} {schema.get('description', '')}"
            prose[f"the description of argument {arg!r} of {tool.name!r}"] = schema.get("description", "")
        if SPENDS_PHRASE not in tool.description.lower():
            yield "spends", f"the description of {tool.name!r} does not say what a call spends"
    keys: list[str] = []
    strings: list[str] = []
    numbers: list[float] = []
    seen = visible_observations(spec, observations, trajectories)
    for observation in seen:
        _keys_and_strings(observation, keys, strings, numbers)
    shown_names = set(names.values())
    for key in dict.fromkeys(keys):
        base = re.sub(r" \d+$", "", key)
        if key in RUNTIME_KEYS or key in shown_names or base in shown_names or key.isdigit():
            continue
        yield "internal_key", f"an observation shows the internal key {key!r}"
        break
    for value in dict.fromkeys(strings):
        if value.startswith(tuple(shown_names)) or " " in value.strip() and "_" not in value:
            continue  # prose (an error message, a status sentence) is linted for words below
        if "_" in value or value in GENERIC_WORDS:
            yield "internal_value", f"an observation shows the internal value {value!r}"
            break
    texts["the observations"] = " ".join([*dict.fromkeys(keys), *dict.fromkeys(strings)])
    literal = _literal_words(mechanism, spec)
    found = first_wording_problem(spec.family, rendering.passage_id, texts, literal)
    if found:
        yield "wording", " ".join(found)
    party = party_problem(spec.family, rendering.passage_id, texts.values(), literal)
    if party:
        yield "foreign_party", f"the text {party}"
    yield from _decoy_labels(spec, mechanism, seen)
    for kind, check in (("article", article_problem), ("plural", plural_problem), ("residue", residue_problem)):
        for where, text in [*prose.items(), ("the observations", " ".join(strings))]:
            problem = check(text)
            if problem:
                yield kind, f"{where} {problem}"
                break
    residue = next((x for x in numbers if number_residue(x)), None)
    if residue is not None:
        yield "residue", f"an observation shows the number {residue!r}"
    counted = count_problem(rendering.instructions["hidden"], keys)
    if counted:
        yield "count", counted


def _literal_words(mechanism, spec: EnvSpec) -> frozenset[str]:
    """The words of the family's own sentences: its facts rendered with a vocabulary of placeholders."""
    params = mechanism.params_from_data(spec.params)
    blank = vocabulary({key: "zzz" for key in passage_vocabulary(spec.rendering.passage_id, spec.family)})
    return frozenset(words_of(stated(mechanism.facts(params, blank))) - {"zzz"})


def _decoy_labels(spec: EnvSpec, mechanism, seen: list[Any]) -> Iterator[tuple[str, str]]:
    """A decoy whose tool or observation does not name the quantity it estimates (the phrase file's `estimates`
    nouns), or whose observation does not name who posts it (the bundle's `source`)."""
    rendering = spec.rendering
    words = vocabulary(passage_vocabulary(rendering.passage_id, spec.family))
    source = words["source"].lower()
    operations = {op.name: op for op in mechanism.operations(mechanism.params_from_data(spec.params))}
    env = Environment(spec, "hidden")
    for tool in rendering.tools:
        op = operations.get(tool.operation)
        if op is None or not op.decoy:
            continue
        nouns = [n.lower() for n in estimate_nouns(spec.family, op.estimates or "", words)]
        if not nouns:
            yield "decoy_label", (f"the decoy {tool.name!r} estimates {op.estimates!r}, which the family's phrase file "
                                  "does not declare under `estimates`")
            continue
        name = tool.name.replace("_", " ")
        if not any(noun in name or noun in tool.description.lower() for noun in nouns):
            yield "decoy_label", f"the decoy {tool.name!r} does not name what it estimates ({' or '.join(nouns)})"
            continue
        labels = [key.lower() for key in env.step(tool.name, {}) if key not in RUNTIME_KEYS]
        if not any(source in label and any(noun in label for noun in nouns) for label in labels):
            yield "decoy_label", (f"the decoy {tool.name!r} shows {labels[:1]}, a label that does not name both "
                                  f"the {words['source']} and what it estimates ({' or '.join(nouns)})")


def _stem(word: str) -> str:
    """A word's first four letters, a plural "s" aside ("days" and "day", "limits" and "limit" match)."""
    return (word[:-1] if word.endswith("s") else word)[:4]


_NUMBERED_KEY = re.compile(r"^(.*\D) (\d+)$")
_COUNT_WINDOW = 3


def count_problem(text: str, keys: list[str]) -> str | None:
    """A numbered thing the observations show more of than the text ever counts: for "kitting table hour 3", the
    text must state a count of at least 3 within a few words before a word of its name ("3 limits on kitting table
    hours"), or None."""
    highest: dict[str, int] = {}
    for key in keys:
        match = _NUMBERED_KEY.match(key)
        if match:
            highest[match.group(1)] = max(highest.get(match.group(1), 0), int(match.group(2)))
    tokens = re.findall(r"[A-Za-z]+|\d+(?:\.\d+)?", text.lower())
    for base, k in sorted(highest.items()):
        if k < 2:
            continue
        stems = {_stem(w) for w in words_of(base) if len(w) > 2}
        if not any(token.replace(".", "").isdigit() and float(token) >= k
                   and any(_stem(t) in stems for t in tokens[at + 1:at + 1 + _COUNT_WINDOW])
                   for at, token in enumerate(tokens)):
            return (f"the observations number {base!r} up to {k}, but the rules never count that many; state how many "
                    "there are")
    return None
