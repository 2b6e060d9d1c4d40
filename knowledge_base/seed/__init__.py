"""The curated seed: strategies written by the team, one JSON object a line in
strategies.jsonl (source "seed", no evidence yet).

vectors.npz caches the seed's all-MiniLM-L6-v2 vectors by ``vector_tag`` (the
embedder and the exact text), so a new store is seeded without running the
model; a seed whose text changed is simply embedded again. Regenerate it after
editing the seed: ``.venv/bin/python -m knowledge_base.seed``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..model import Strategy
from ..ranking.embed import Embedder, vector_tag
from ..store import Store

SEED_FILE = Path(__file__).with_name("strategies.jsonl")
VECTOR_CACHE = Path(__file__).with_name("vectors.npz")
_TEXT = ("title", "summary", "rationale", "applies_to")


def seed_strategies() -> list[Strategy]:
    lines = SEED_FILE.read_text(encoding="utf-8").splitlines()
    return [Strategy.from_dict(json.loads(line)) for line in lines if line.strip()]


def cached_vectors() -> dict[str, np.ndarray]:
    if not VECTOR_CACHE.exists():
        return {}
    with np.load(VECTOR_CACHE, allow_pickle=False) as data:
        return {str(t): v.astype(np.float32) for t, v in zip(data["tags"], data["vectors"])}


def write_vector_cache(embedder: Embedder) -> int:
    seeds = seed_strategies()
    vectors = embedder.embed([s.text() for s in seeds])
    np.savez(VECTOR_CACHE, tags=np.array([vector_tag(embedder, s.text()) for s in seeds]), vectors=vectors)
    return len(seeds)


def embed_seeds(strategies: list[Strategy], embedder: Embedder) -> tuple[np.ndarray, list[str]]:
    """Vectors and tags for ``strategies``: from the cache where the text is unchanged, else computed."""
    tags = [vector_tag(embedder, s.text()) for s in strategies]
    cache = cached_vectors()
    missing = [i for i, t in enumerate(tags) if t not in cache]
    fresh = embedder.embed([strategies[i].text() for i in missing]) if missing else None
    out = np.zeros((len(strategies), embedder.dim), np.float32)
    for i, t in enumerate(tags):
        if t in cache:
            out[i] = cache[t]
    for j, i in enumerate(missing):
        out[i] = fresh[j]  # type: ignore[index]
    return out, tags


def load_seed(store: Store, embedder: Embedder | None = None) -> int:
    """Add the seed strategies; idempotent. A seed already stored keeps its evidence and confidence and
    takes the file's wording (so edits to the seed reach existing stores); without an ``embedder`` the
    vectors are computed at the first search. Returns how many were added."""
    added, changed = 0, []
    for seed in seed_strategies():
        current = store.get(seed.id)
        if current is None:
            added += 1
            changed.append(seed)
        elif any(getattr(current, f) != getattr(seed, f) for f in _TEXT):
            for f in _TEXT:
                setattr(current, f, getattr(seed, f))
            changed.append(current)
    if embedder is None:
        for strategy in changed:
            store.put(strategy)
        return added
    vectors, tags = embed_seeds(changed, embedder) if changed else (np.zeros((0, embedder.dim)), [])
    for strategy, vector, tag in zip(changed, vectors, tags):
        store.put(strategy, vector, tag)
    return added
