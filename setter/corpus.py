"""The labeled corpus shipped in the repo: passages tagged with a domain and the families they suit.

A passage is one world: its place, organization, currency and text are shared by every family, and each family
has its own bundle of words (`bundles`): the persona who does that task (`role`), the party that posts the
outside estimates (`source`) and the nouns of that task, chosen to fit one another (the supplier sells the goods,
the buyer buys the lot). A family's words are the passage's shared vocabulary overlaid with its bundle.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache, lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

CORPUS_FILE = Path(__file__).parent / "corpus" / "passages.json"
VOCAB_KEYS = ("place", "organization", "role", "item", "items", "unit", "supplier", "period", "order_verb",
              "candidate", "candidates", "capacity", "product", "products", "resource", "resources",
              "currency", "site", "sites", "vehicle", "customer", "customers", "counterpart", "deal",
              "offer", "offers", "option", "options", "job", "jobs", "machine", "machines")
# every family's bundle names its persona and the party that posts its outside estimates
BUNDLE_KEYS = ("role", "source")
# the words of a bundle that name who is who: no two families of a corpus share one (lint: a text names only its own)
PARTY_KEYS = ("role", "source", "supplier", "counterpart")


class Passage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    domain: str
    families: list[str]
    text: str
    vocab: dict[str, str]
    bundles: dict[str, dict[str, str]]

    def words(self, family: str) -> dict[str, str]:
        """The words of this passage for one family: the shared vocabulary overlaid with the family's bundle."""
        return {**self.vocab, **self.bundles.get(family, {})}


@lru_cache(maxsize=1)
def load_corpus() -> tuple[Passage, ...]:
    data = json.loads(CORPUS_FILE.read_text())
    passages = tuple(Passage.model_validate(p) for p in data["passages"])
    for passage in passages:
        missing = set(VOCAB_KEYS) - set(passage.vocab)
        if missing:
            raise ValueError(f"corpus passage {passage.id} lacks vocabulary {sorted(missing)}")
        for family in passage.families:
            lacking = set(BUNDLE_KEYS) - set(passage.bundles.get(family, {}))
            if lacking:
                raise ValueError(f"corpus passage {passage.id} has no {sorted(lacking)} in its bundle for {family}")
    return passages


def passages_for(family: str) -> list[Passage]:
    return [p for p in load_corpus() if family in p.families]


def domains() -> list[str]:
    return sorted({p.domain for p in load_corpus()})


def choose_passage(family: str, instance_key: str, attempt: int = 1) -> Passage:
    """A passage for this instance: spread over domains by a stable hash, a different one per attempt."""
    suited = passages_for(family)
    if not suited:
        raise ValueError(f"no corpus passage is tagged for family {family!r}")
    digest = int(hashlib.sha256(instance_key.encode()).hexdigest()[:12], 16)
    return suited[(digest + 7 * (attempt - 1)) % len(suited)]


@cache
def passage_by_id(passage_id: str) -> Passage:
    """A passage by id (what a rendering names in `passage_id`); ValueError if unknown."""
    for passage in load_corpus():
        if passage.id == passage_id:
            return passage
    raise ValueError(f"unknown corpus passage {passage_id!r}")


def passage_vocabulary(passage_id: str, family: str | None = None) -> dict[str, str]:
    """The words of a passage by id: for `family`, its bundle over the shared vocabulary; ValueError if unknown."""
    passage = passage_by_id(passage_id)
    return passage.words(family) if family is not None else dict(passage.vocab)


@cache
def party_phrases() -> dict[str, frozenset[tuple[str, str]]]:
    """Every party phrase of the corpus (PARTY_KEYS of every bundle) -> the (passage id, family) pairs naming it."""
    found: dict[str, set[tuple[str, str]]] = {}
    for passage in load_corpus():
        for family, bundle in passage.bundles.items():
            for key in PARTY_KEYS:
                if key in bundle:
                    found.setdefault(bundle[key], set()).add((passage.id, family))
    return {phrase: frozenset(owners) for phrase, owners in found.items()}
