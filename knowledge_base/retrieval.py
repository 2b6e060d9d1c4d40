"""Hybrid retrieval: embeddings + BM25 keywords + structured filters + confidence.

``mode="embedding"`` ranks by cosine similarity alone, ``"keyword"`` by BM25
alone, ``"hybrid"`` by a weighted sum of the cosine, the BM25 score scaled to
the best candidate's, the strategy's confidence (recomputed for the asked
architecture) and how specifically its op-family tags match. Filters are hard:
a strategy for another backend or a newer GPU never appears.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .confidence import ConfidencePolicy, confidence
from .filters import Filters, family_match
from .model import Strategy
from .ranking.bm25 import BM25, tokenize
from .ranking.embed import Embedder, vector_tag
from .seed import cached_vectors
from .store import Indexed, Store

Mode = Literal["embedding", "keyword", "hybrid"]
MODES: tuple[str, ...] = ("embedding", "keyword", "hybrid")


@dataclass(frozen=True)
class Weights:
    embedding: float = 0.55
    keyword: float = 0.30
    confidence: float = 0.10
    family: float = 0.05


@dataclass
class Hit:
    strategy: Strategy
    score: float
    parts: dict[str, float]

    def __iter__(self):  # unpacks as (strategy, score, parts)
        return iter((self.strategy, self.score, self.parts))


def ensure_vectors(store: Store, embedder: Embedder, rows: list[Indexed]) -> np.ndarray:
    """The rows' vectors by ``embedder``; missing or stale ones (another embedder, or text changed
    since) are taken from the seed's vector cache or computed in one batch, and saved."""
    tags = [vector_tag(embedder, r.strategy.text()) for r in rows]
    stale = [i for i, r in enumerate(rows) if r.vector is None or r.embedder != tags[i]]
    if stale:
        cache = cached_vectors()
        todo = [i for i in stale if tags[i] not in cache]
        computed = dict(zip(todo, embedder.embed([rows[i].strategy.text() for i in todo]))) if todo else {}
        fresh = [cache[tags[i]] if tags[i] in cache else computed[i] for i in stale]
        for i, v in zip(stale, fresh):
            rows[i].vector, rows[i].embedder = v, tags[i]
            store.put(rows[i].strategy, v, tags[i])
    if not rows:
        return np.zeros((0, embedder.dim), np.float32)
    return np.stack([np.asarray(r.vector, np.float32) for r in rows])


class Retriever:
    def __init__(self, store: Store, embedder: Embedder, weights: Weights = Weights(),
                 policy: ConfidencePolicy = ConfidencePolicy(), clock: Callable[[], float] = time.time) -> None:
        self.store, self.embedder, self.weights, self.policy, self.clock = store, embedder, weights, policy, clock

    def vectors(self, rows: list[Indexed]) -> np.ndarray:
        return ensure_vectors(self.store, self.embedder, rows)

    def search(self, query: str, filters: Filters | None = None, k: int = 5, mode: Mode = "hybrid") -> list[Hit]:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        filters = filters or Filters()
        qv = None if mode == "keyword" else self.embedder.embed([query])[0]
        rows = self.store.candidates(filters, qv, max(50, 10 * k))
        if not rows:
            return []
        cosine = np.zeros(len(rows)) if qv is None else self.vectors(rows) @ qv
        bm25 = BM25([tokenize(r.strategy.text()) for r in rows]).scores(tokenize(query))
        keyword = bm25 / bm25.max() if bm25.max() > 0 else bm25
        now, w = self.clock(), self.weights
        hits = []
        for i, r in enumerate(rows):
            s = r.strategy
            parts = {"embedding": round(float(cosine[i]), 4), "keyword": round(float(keyword[i]), 4),
                     "bm25": round(float(bm25[i]), 4),
                     "confidence": confidence(s, now, filters.arch, self.policy),
                     "family": family_match(s, filters.op_families) if filters.op_families else 0.0}
            if mode == "embedding":
                score = parts["embedding"]
            elif mode == "keyword":
                score = parts["bm25"]
            else:
                score = (w.embedding * max(0.0, parts["embedding"]) + w.keyword * parts["keyword"]
                         + w.confidence * parts["confidence"] + w.family * parts["family"])
            hits.append(Hit(s, round(score, 4), parts))
        hits.sort(key=lambda h: (-h.score, h.strategy.id))
        return hits[:k]
