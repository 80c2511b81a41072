"""Narrative measures: distinct n-grams and MiniLM embeddings (the packaged model, run offline)."""

from __future__ import annotations

import numpy as np

from reports.embedding import load_model
from reports.narrative import distinct_ngrams, narrative_measures


def test_distinct_ngrams_counts_repeats_once():
    grams = distinct_ngrams(["the cat sat", "the cat ran 42 times"], 2)
    # bigrams: the cat, cat sat | the cat, cat ran, ran times (the number is left out)
    assert (grams["ngrams"], grams["distinct"]) == (5, 4)


def test_the_sentence_model_places_paraphrases_closer_than_unrelated_text():
    vectors = load_model().encode(["A cat sits on the mat.", "A kitten is sitting on a rug.",
                                   "The quarterly tax filing deadline is in April."])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > 0.5 > 0.2 > similarity[0, 2]
    # batching and padding do not change a text's vector
    alone = load_model().encode(["A kitten is sitting on a rug."])
    assert np.allclose(alone[0], vectors[1], atol=1e-5)


def test_identical_titles_are_near_duplicates_and_lower_the_dispersion():
    varied = [{"family": "f", "title": t, "story": t} for t in
              ("Harbour ferry timetable planning", "Orchard irrigation for the dry season",
               "A bakery choosing its weekly flour orders")]
    same = [{"family": "f", "title": "Harbour ferry timetable planning", "story": "x"}] * 3
    spread, copies = narrative_measures(varied)["embeddings"], narrative_measures(same)["embeddings"]
    assert copies["near_duplicate_pairs"] == 3 and spread["near_duplicate_pairs"] == 0
    assert copies["dispersion"] < 1e-4 < spread["dispersion"]
