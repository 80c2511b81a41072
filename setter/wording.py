"""Whether a text speaks its passage's words for its family: no generic template word, no word of another task.

The prose lint (envs.lint) refuses an environment whose text fails this check; the LLM setter's compact drafts
(a small model's) keep the model's title, story and tool names only where they pass it, the phrasebook's elsewhere.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from setter.corpus import PARTY_KEYS, passage_by_id
from setter.phrasebook import family_phrases, family_vocabulary_keys

# what the generic template and the mechanisms call things; a passage's own words replace them
TEMPLATE_WORDS = frozenset({
    "item", "items", "candidate", "candidates", "product", "products", "resource", "resources", "site", "sites",
    "customer", "customers", "job", "jobs", "machine", "machines", "option", "options", "offer", "offers",
    "counterpart", "deal", "supplier", "vehicle", "sticker", "box", "boxes", "prize", "prizes", "enjoyment",
})
_WORD = re.compile(r"[A-Za-z]+")


def words_of(text: str) -> set[str]:
    """The lower-case words of a text; identifiers are split at underscores and digits."""
    return {w.lower() for w in _WORD.findall(text.replace("_", " "))}


@functools.lru_cache(maxsize=4096)
def vocabulary_words(family: str, passage_id: str, literal: frozenset[str] = frozenset()
                     ) -> tuple[frozenset[str], dict[str, str]]:
    """(the words of the passage's vocabulary this family names, the nouns of the passage's other tasks: each
    normalised (its lower-case words, one space between them) -> its vocabulary key, longest first).

    Another task's noun is a noun of another family's bundle (not a party: grammar.party_problem looks for those)
    with a word that is neither in this family's words, nor in its phrase file's own sentences, nor in `literal`
    (the words of the family's own facts)."""
    passage = passage_by_id(passage_id)
    vocab = passage.words(family)
    used = family_vocabulary_keys(family) | {"role", "source", "place", "organization"}  # every story's own
    own_words = frozenset().union(*(words_of(vocab[key]) for key in used if key in vocab))
    known = own_words | template_words(family) | literal
    foreign: dict[str, str] = {}
    for other, bundle in passage.bundles.items():
        for key, phrase in bundle.items():
            if other == family or key in PARTY_KEYS or key == "order_verb":
                continue
            phrase_words = words_of(phrase)
            if phrase_words and not phrase_words <= known:
                foreign[" ".join(_WORD.findall(phrase.lower()))] = key
    return own_words, {phrase: foreign[phrase] for phrase in sorted(foreign, key=len, reverse=True)}


@functools.cache
def template_words(family: str) -> frozenset[str]:
    """The literal words of a family's phrase file (its patterns without their placeholders)."""
    found: set[str] = set()
    stack: list = [family_phrases(family), family_phrases("_runtime")]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            found |= words_of(re.sub(r"\{[^}]*\}", " ", value))
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return frozenset(found)


def first_phrase(text: str, phrases: Iterable[str]) -> str | None:
    """The phrase that occurs first in a normalised text as whole words (of two at one place, the one listed first):
    a normalised text is words and single spaces, so a whole-word match is a match between spaces."""
    padded = f" {text} "
    found = None
    for phrase in phrases:
        at = padded.find(f" {phrase} ")
        if at >= 0 and (found is None or at < found[0]):
            found = (at, phrase)
    return None if found is None else found[1]


def _normalised(text: str) -> str:
    """The text's lower-case words, one space between them (identifiers split at underscores and digits)."""
    return " ".join(_WORD.findall(text.replace("_", " ").lower()))


def wording_problem(family: str, passage_id: str, text: str,
                    literal: frozenset[str] = frozenset()) -> str | None:
    """What is wrong with the text's words for this family and passage, or None."""
    own_words, foreign = vocabulary_words(family, passage_id, literal)
    generic = sorted((words_of(text) & TEMPLATE_WORDS) - own_words)
    if generic:
        return f"uses the generic word {generic[0]!r}; use the passage's word"
    phrase = first_phrase(_normalised(text), foreign)
    if phrase is not None:
        return f"uses {phrase!r}, the passage's word for another task's {foreign[phrase]}"
    return None


def first_wording_problem(family: str, passage_id: str, texts: dict[str, str],
                          literal: frozenset[str] = frozenset()) -> tuple[str, str] | None:
    """The first of the named texts whose words are wrong (wording_problem), as (its name, the problem), or None.

    All the texts are looked at together first: their words in one set, and a foreign phrase searched for only when
    every word of it is there, in their normalised forms joined by " | " (a phrase is words and spaces, so none
    matches across a join). Only when something is found are they looked at one by one, to name the first."""
    own_words, foreign = vocabulary_words(family, passage_id, literal)
    joined = "\n".join(texts.values())
    if joined.isascii():  # lower-casing keeps letters letters: the words of the lower-cased texts are the words
        per_text = [_WORD.findall(text.replace("_", " ").lower()) for text in texts.values()]
        words = set().union(*per_text)
    else:
        per_text, words = None, words_of(joined)
    found = bool((words & TEMPLATE_WORDS) - own_words)
    if not found:
        present = [phrase for phrase, needed in _phrase_words(family, passage_id, literal).items() if needed <= words]
        if present:
            normalised = (" | ".join(map(_normalised, texts.values())) if per_text is None
                          else " | ".join(" ".join(text_words) for text_words in per_text))
            found = first_phrase(normalised, present) is not None
    if not found:
        return None
    for where, text in texts.items():
        problem = wording_problem(family, passage_id, text, literal)
        if problem:
            return where, problem
    return None


@functools.lru_cache(maxsize=4096)
def _phrase_words(family: str, passage_id: str, literal: frozenset[str]) -> dict[str, frozenset[str]]:
    """Each foreign phrase of vocabulary_words (in its order) and its words: it can occur only where they all do."""
    return {phrase: frozenset(phrase.split()) for phrase in vocabulary_words(family, passage_id, literal)[1]}
