"""setter.grammar's party check: the indexed search finds exactly the phrases a plain whole-word scan finds."""

from __future__ import annotations

import random
import re

import mechanisms
from setter.corpus import party_phrases, passages_for
from setter.grammar import foreign_parties, party_phrases_normalised, party_problem

_WORD = re.compile(r"[A-Za-z]+")


def _scanned(family: str, passage_id: str, texts: list[str], literal: frozenset[str]) -> str | None:
    """The reference: every foreign phrase looked for by a whole-word scan of the joined texts, the first one by
    position (of two at one place, the longer: foreign_parties lists the longest first)."""
    joined = " " + " | ".join(" ".join(_WORD.findall(t.replace("_", " ").lower())) for t in texts) + " "
    places = [(joined.find(f" {p} "), i, p) for i, p in enumerate(foreign_parties(family, passage_id, literal))]
    found = min(((at, i, p) for at, i, p in places if at >= 0), default=None)
    return None if found is None else found[2]


def test_the_party_check_finds_what_a_whole_word_scan_finds():
    rng = random.Random(7)
    phrases = list(party_phrases())
    pairs = [(m.id, p.id) for m in mechanisms.families() for p in passages_for(m.id)]
    fillers = ["the", "a", "Order_from", "x", "7 boxes of", "|"]
    found = 0
    for _ in range(600):
        family, passage_id = rng.choice(pairs)
        texts = [" ".join(f"{rng.choice(fillers)} {rng.choice(phrases)}" for _ in range(rng.randint(0, 4))) + " end"
                 for _ in range(rng.randint(1, 3))]
        literal = frozenset(rng.sample(["the", "scout", "agent", "broker", "shop", "farm"], rng.randint(0, 3)))
        expected = _scanned(family, passage_id, texts, literal)
        problem = party_problem(family, passage_id, texts, literal)
        if expected is None:
            assert problem is None, (family, passage_id, texts)
        else:
            found += 1
            owner = sorted(party_phrases_normalised()[expected])[0]
            assert problem == (f"names {expected!r}, a party of another story ({owner[1]} in {owner[0]}); use this "
                               "passage's bundle"), (family, passage_id, texts)
    assert found > 300  # most draws hold another story's party: the check was exercised
