"""Whether a text reads as written by a person: articles by sound, no "(s)", figures as a ledger prints them, and
no party (persona, source of estimates, supplier, counterpart) from another world of the corpus.

Each check returns the first problem it finds as a one-line description, or None; the prose lint (envs.lint) runs
them over everything an agent sees.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from mechanisms.prose import DECIMALS, article
from setter.corpus import party_phrases, passage_by_id
from setter.wording import first_phrase, template_words, words_of

_ARTICLE = re.compile(r"(?<![\w'])([Aa]n?) ([A-Za-z0-9][\w-]*)")
_PLURAL_MARKER = re.compile(r"\w\((?:s|es)\)")
_ONE_OF_ONE = re.compile(r"\bnumbered 1 to 1\b")
_RESIDUE = re.compile(rf"(?<![\w.])-?\d+\.(?:0+|\d{{{DECIMALS + 1},}})(?!\w|\.\d)")
_WORD = re.compile(r"[A-Za-z]+")


def article_problem(text: str) -> str | None:
    """ "a" before a vowel sound or "an" before a consonant sound ("a away ground", "an uniform"), or None."""
    for match in _ARTICLE.finditer(text):
        written, word = match.group(1), match.group(2)
        if word.isupper() and len(word) == 1:  # "a B" of a variable, not a word
            continue
        expected = article(word)
        if written.lower() != expected:
            return f"writes {written!r} before {word!r}; by its sound it takes {expected!r}"
    return None


def plural_problem(text: str) -> str | None:
    """A plural left to the reader ("6 limit(s)", "numbered 1 to 1"), or None."""
    found = _PLURAL_MARKER.search(text)
    if found:
        return f"writes {found.group(0)!r}; write the plural the count needs"
    if _ONE_OF_ONE.search(text):
        return "writes 'numbered 1 to 1'; a single thing is numbered 1"
    return None


def residue_problem(text: str) -> str | None:
    """A figure printed as a float prints it ("96.0", "160.20000000000002"), or None."""
    found = _RESIDUE.search(text)
    if found:
        return f"prints the figure {found.group(0)}; print it as a ledger does (mechanisms.prose.figure)"
    return None


def number_residue(value: float) -> bool:
    """Whether an observed number carries float residue: an integral float, or more decimals than a ledger keeps."""
    if isinstance(value, bool) or not isinstance(value, float) or value != value or value in (float("inf"),
                                                                                              float("-inf")):
        return False
    return value == int(value) or round(value, DECIMALS) != value


@functools.lru_cache(maxsize=4096)
def foreign_parties(family: str, passage_id: str, literal: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The corpus's party phrases that are not this environment's (another passage's, or another family's of this
    passage) and could not come from its own words: some word of them is neither in its vocabulary, nor in the
    family's phrase file, nor in `literal` (the words of the family's own sentences), longest first."""
    words = passage_by_id(passage_id).words(family)
    own_phrases = {value for value in words.values()}
    own_words = set().union(*(words_of(value) for value in words.values())) | template_words(family) | literal
    foreign = [phrase for phrase, owners in party_phrases().items()
               if phrase not in own_phrases and (passage_id, family) not in owners
               and not words_of(phrase) <= own_words]
    return tuple(" ".join(_WORD.findall(p.lower())) for p in sorted(foreign, key=len, reverse=True))


def party_problem(family: str, passage_id: str, texts: Iterable[str],
                  literal: frozenset[str] = frozenset()) -> str | None:
    """A persona, source, supplier or counterpart of another world in the texts ("ordered from the cooperage" in a
    winery whose supplier is a wine merchant), or None."""
    phrases = foreign_parties(family, passage_id, literal)
    if not phrases:
        return None
    joined = " | ".join(" ".join(_WORD.findall(text.replace("_", " ").lower())) for text in texts)
    present = [p for p in phrases if f" {p} " in f" {joined} "]
    found = first_phrase(joined, present) if present else None
    if found is None:
        return None
    owner = sorted(party_phrases_normalised()[found])[0]
    return f"names {found!r}, a party of another story ({owner[1]} in {owner[0]}); use this passage's bundle"


@functools.cache
def party_phrases_normalised() -> dict[str, frozenset[tuple[str, str]]]:
    out: dict[str, set[tuple[str, str]]] = {}
    for phrase, owners in party_phrases().items():
        out.setdefault(" ".join(_WORD.findall(phrase.lower())), set()).update(owners)
    return {k: frozenset(v) for k, v in out.items()}
