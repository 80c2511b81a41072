"""The corpus: one world per passage, a bundle of words per family, and no party shared between two families."""

from __future__ import annotations

import collections

import pytest

from setter.corpus import BUNDLE_KEYS, PARTY_KEYS, load_corpus, passage_by_id
from setter.phrasebook import family_vocabulary_keys, vocabulary


def test_every_family_of_a_passage_has_its_bundle():
    for passage in load_corpus():
        for family in passage.families:
            bundle = passage.bundles[family]
            assert set(BUNDLE_KEYS) <= set(bundle), (
                f"{passage.id}: the bundle of {family} lacks {sorted(set(BUNDLE_KEYS) - set(bundle))}; fix: add them "
                f"to bundles[{family!r}] of this passage in setter/corpus/passages.json")
            needed = {k for k in family_vocabulary_keys(family) if k in bundle or k in ("role", "source")}
            missing = needed - set(bundle)
            assert not missing, f"{passage.id}: the bundle of {family} lacks {sorted(missing)}; fix: add them"


def test_within_a_passage_each_family_has_its_own_persona_and_source():
    for passage in load_corpus():
        for key in ("role", "source"):
            values = [bundle[key] for bundle in passage.bundles.values()]
            twice = collections.Counter(values).most_common(1)[0]
            assert len(set(values)) == len(values), (
                f"{passage.id}: two families' bundles share the {key} {twice[0]!r}; fix: give each family of the "
                "passage its own (setter/corpus/passages.json)")


def test_no_persona_organisation_or_source_is_shared_by_two_families_or_two_passages():
    """Within a night, a name recurs across families only where the passage is the same."""
    families_of: dict[tuple[str, str], set[str]] = collections.defaultdict(set)
    organisations = collections.Counter(p.vocab["organization"] for p in load_corpus())
    assert organisations.most_common(1)[0][1] == 1, organisations.most_common(1)
    for passage in load_corpus():
        for family, bundle in passage.bundles.items():
            for key in PARTY_KEYS:
                if key in ("role", "source") and key in bundle:
                    families_of[(key, bundle[key])].add(family)
    shared = {name: fams for name, fams in families_of.items() if len(fams) > 1}
    assert not shared, "; ".join(
        f"the {key} {name!r} is in the bundles of {sorted(fams)}" for (key, name), fams in sorted(shared.items())[:5]
    ) + "; fix: a persona or source belongs to one family: rename it in all but one (setter/corpus/passages.json)"


def test_a_familys_words_overlay_the_shared_vocabulary():
    passage = load_corpus()[0]
    words = passage.words("inventory_dp")
    assert words["supplier"] == passage.bundles["inventory_dp"]["supplier"]
    assert words["place"] == passage.vocab["place"]
    derived = vocabulary(words)
    assert derived["periods"].startswith(words["period"][:3]) and derived["a_item"].endswith(words["item"])


def test_an_unknown_passage_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown corpus passage 'nowhere-9'"):
        passage_by_id("nowhere-9")
