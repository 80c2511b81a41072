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


@functools.cache
def _party_index() -> tuple[tuple[tuple[str, str, frozenset[str], frozenset[tuple[str, str]]], ...],
                            dict[str, frozenset[int]]]:
    """Every party phrase of the corpus, longest first, as (written, normalised, its words, its owners); and, for
    each word that starts a normalised phrase, the lengths in words of the phrases it starts."""
    phrases = sorted(party_phrases().items(), key=lambda item: len(item[0]), reverse=True)
    index = tuple((phrase, " ".join(_WORD.findall(phrase.lower())), frozenset(words_of(phrase)), owners)
                  for phrase, owners in phrases)
    starts: dict[str, set[int]] = {}
    for _, normalised, _, _ in index:
        if normalised:
            first, *rest = normalised.split(" ")
            starts.setdefault(first, set()).add(len(rest) + 1)
    return index, {word: frozenset(lengths) for word, lengths in starts.items()}


@functools.lru_cache(maxsize=4096)
def _own_vocabulary(family: str, passage_id: str) -> tuple[frozenset[str], frozenset[str]]:
    """(the party phrases of this family's bundle in the passage, the words its vocabulary and phrase file use)."""
    words = passage_by_id(passage_id).words(family)
    own_words = set().union(*(words_of(value) for value in words.values())) | template_words(family)
    return frozenset(words.values()), frozenset(own_words)


def _foreign(family: str, passage_id: str, literal: frozenset[str], only: set[str] | None = None) -> list[str]:
    """The normalised party phrases (those in `only`, when given) of another world that this environment's words
    (its vocabulary, its phrase file, `literal`) cannot spell, longest first."""
    own_phrases, own_words = _own_vocabulary(family, passage_id)
    spellable = own_words | literal
    return [normalised for phrase, normalised, phrase_words, owners in _party_index()[0]
            if (only is None or normalised in only) and phrase not in own_phrases
            and (passage_id, family) not in owners and not phrase_words <= spellable]


def foreign_parties(family: str, passage_id: str, literal: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The corpus's party phrases that are not this environment's (another passage's, or another family's of this
    passage) and could not come from its own words: some word of them is neither in its vocabulary, nor in the
    family's phrase file, nor in `literal` (the words of the family's own sentences), longest first."""
    return tuple(_foreign(family, passage_id, literal))


def _party_runs(texts: Iterable[str]) -> set[str]:
    """Every run of words in the texts (lower case, identifiers split at underscores) that starts as a party
    phrase starts and is as long as one: a normalised phrase occurs as whole words in a text exactly when it is one
    of these."""
    starts = _party_index()[1]
    runs: set[str] = set()
    for text in texts:
        words = _WORD.findall(text.replace("_", " ").lower())
        for at, word in enumerate(words):
            for length in starts.get(word, ()):
                if at + length <= len(words):
                    runs.add(" ".join(words[at:at + length]))
    return runs


def party_problem(family: str, passage_id: str, texts: Iterable[str],
                  literal: frozenset[str] = frozenset()) -> str | None:
    """A persona, source, supplier or counterpart of another world in the texts ("ordered from the cooperage" in a
    winery whose supplier is a wine merchant), or None."""
    texts = list(texts)
    present = _foreign(family, passage_id, literal, only=_party_runs(texts))  # only the phrases the texts hold
    if not present:
        return None
    joined = " | ".join(" ".join(_WORD.findall(text.replace("_", " ").lower())) for text in texts)
    found = first_phrase(joined, present)
    owner = sorted(party_phrases_normalised()[found])[0]
    return f"names {found!r}, a party of another story ({owner[1]} in {owner[0]}); use this passage's bundle"


@functools.cache
def party_phrases_normalised() -> dict[str, frozenset[tuple[str, str]]]:
    out: dict[str, set[tuple[str, str]]] = {}
    for phrase, owners in party_phrases().items():
        out.setdefault(" ".join(_WORD.findall(phrase.lower())), set()).update(owners)
    return {k: frozenset(v) for k, v in out.items()}
