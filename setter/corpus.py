"""The labeled corpus shipped in the repo: passages tagged with a domain and the families they suit."""

from __future__ import annotations

import hashlib
import json
from functools import cache, lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

CORPUS_FILE = Path(__file__).parent / "corpus" / "passages.json"
VOCAB_KEYS = ("place", "organization", "role", "item", "items", "unit", "supplier", "period", "order_verb",
              "candidate", "candidates", "capacity", "product", "products", "resource", "resources",
              "sticker", "currency", "site", "sites", "vehicle", "customer", "customers", "counterpart", "deal",
              "offer", "offers", "option", "options", "job", "jobs", "machine", "machines")


class Passage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    domain: str
    families: list[str]
    text: str
    vocab: dict[str, str]


@lru_cache(maxsize=1)
def load_corpus() -> tuple[Passage, ...]:
    data = json.loads(CORPUS_FILE.read_text())
    passages = tuple(Passage.model_validate(p) for p in data["passages"])
    for passage in passages:
        missing = set(VOCAB_KEYS) - set(passage.vocab)
        if missing:
            raise ValueError(f"corpus passage {passage.id} lacks vocabulary {sorted(missing)}")
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
def passage_vocabulary(passage_id: str) -> dict[str, str]:
    """The vocabulary of a passage by id (what a rendering names in `passage_id`); ValueError if unknown."""
    for passage in load_corpus():
        if passage.id == passage_id:
            return dict(passage.vocab)
    raise ValueError(f"unknown corpus passage {passage_id!r}")
