"""How operations read in a passage's vocabulary: tool-name and description patterns per operation.

Each family has one data file, ``setter/phrases/<family>.json``: its title and goal, the vocabulary key
of its main entity, tool-argument names and, per operation, a (tool name, description) pattern pair.
Patterns use the passage vocabulary ({item}, {period}, ...) and ``{x_slug}``/``{x_title}`` forms. An
operation without an entry gets a generic phrasing from its summary, so a new family renders at once.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from mechanisms.prose import a, capital, plural

PHRASES_DIR = Path(__file__).parent / "phrases"
RUNTIME = "_runtime"


# the keys of a phrase file (CONTRIBUTING.md documents each; tests/test_docs.py checks it does)
PHRASE_KEYS = ("title", "goal", "story", "subject", "vocabulary", "estimates", "arguments", "operations",
               "observations")


@cache
def family_phrases(family: str) -> dict[str, Any]:
    """One family's phrase file (title, goal, subject, argument names, operations); empty if it has none."""
    path = PHRASES_DIR / f"{family}.json"
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    unknown = set(data) - set(PHRASE_KEYS)
    if unknown:
        raise ValueError(f"{path} has unknown keys {sorted(unknown)}")
    return data


def phrase(family: str, operation: str, summary: str) -> tuple[str, str]:
    """(tool-name pattern, description pattern) for an operation; generic from its summary if unknown."""
    for scope in (family, RUNTIME):
        patterns = family_phrases(scope).get("operations", {})
        if operation in patterns:
            name, description = patterns[operation]
            return name, description
    return operation, summary[:1].upper() + summary[1:] + "."


def _argument_entry(family: str, argument: str, operation: str | None) -> Any:
    """The phrase file's entry for an argument: the operation's own ("set_price.level") before the family's."""
    arguments = family_phrases(family).get("arguments", {})
    return arguments.get(f"{operation}.{argument}", arguments.get(argument))


def argument_name(family: str, argument: str, operation: str | None = None) -> str:
    """The pattern of a tool argument's name (e.g. 'period' -> '{period_slug}'); the argument itself if none."""
    entry = _argument_entry(family, argument, operation) or argument
    return entry[0] if isinstance(entry, list) else entry


def argument_description(family: str, argument: str, default: str, operation: str | None = None) -> str:
    """The pattern of a tool argument's description: the second entry of its `arguments` pair (the operation's own
    first: each tool's argument text belongs to that tool), else `default`."""
    entry = _argument_entry(family, argument, operation)
    return entry[1] if isinstance(entry, list) else default


def title_pattern(family: str) -> str:
    return family_phrases(family).get("title", "{place}: " + family.replace("_", " "))


def goal_pattern(family: str, summary: str) -> str:
    return family_phrases(family).get("goal", "Make the best decisions you can for {place}: " + summary + ".")


def subject_key(family: str) -> str:
    """The vocabulary key of the family's main entity (item, candidate, product, ...)."""
    return family_phrases(family).get("subject", "item")


def observation_patterns(family: str) -> dict[str, str]:
    """The patterns of the names observations show, by the mechanism's key ({} if the family names none)."""
    return dict(family_phrases(family).get("observations", {}))


def estimate_nouns(family: str, quantity: str, words: dict[str, str]) -> list[str]:
    """The nouns that name a quantity a decoy estimates (the phrase file's `estimates`, in the passage's words): a
    decoy's label must contain one of them. Empty when the family declares none for it."""
    return [noun.format(**words) for noun in family_phrases(family).get("estimates", {}).get(quantity, [])]


def story_pattern(family: str) -> str | None:
    """The family's story: the one task the environment is about, in the passage's words (None: the passage's)."""
    return family_phrases(family).get("story")


_PLACEHOLDER = re.compile(r"\{(?:[aA]_)?([a-z_]+?)(?:_slug|_title)?\}")


@cache
def family_vocabulary_keys(family: str) -> frozenset[str]:
    """The vocabulary keys a family names: every placeholder of its phrase file plus its declared `vocabulary`."""
    data = family_phrases(family)
    keys = set(data.get("vocabulary", []))
    stack: list[Any] = [v for k, v in data.items() if k != "vocabulary"]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            keys.update(_PLACEHOLDER.findall(value))
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    subject = data.get("subject")
    if subject:
        keys.add(subject)
    return frozenset(keys)


def slug(text: str) -> str:
    cleaned = "".join(ch if ch.isalnum() else "_" for ch in text.lower())
    return "_".join(part for part in cleaned.split("_") if part)[:60].rstrip("_") or "x"


def vocabulary(vocab: dict[str, str]) -> dict[str, str]:
    """The vocabulary plus the forms the patterns use: the plural of a noun that has none (``{periods}``), each
    word with its article by sound (``{a_job}`` "an audit", ``{A_job}`` "An audit") and the slug and title forms."""
    words = dict(vocab)
    for key, value in vocab.items():
        if key in PLURALS and f"{key}s" not in words:
            words[f"{key}s"] = plural(value)
    for key, value in list(words.items()):
        words[f"a_{key}"] = a(value)
        words[f"A_{key}"] = capital(a(value))
        words[f"{key}_slug"] = slug(value)
        words[f"{key}_title"] = capital(value)
    return words


# the nouns whose plural a pattern may name ({periods}); the corpus gives the others' plurals itself
PLURALS = frozenset({"period", "unit", "vehicle", "deal", "site", "job", "machine", "customer", "candidate", "item",
                     "product", "resource", "offer", "option", "role", "source", "supplier", "counterpart"})
