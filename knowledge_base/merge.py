"""Merging distilled strategies into a store without duplicates.

A new strategy is the same as a stored one when it has the same id (a plan
entry that cites a retrieved strategy by id), the same title, or a title whose
embedding is within ``threshold`` cosine of the stored one's, among the stored
strategies of an overlapping op family nearest to it by full text. Titles, not
whole texts, are compared: with all-MiniLM-L6-v2, paraphrased titles score
0.83-0.98 while distinct strategies stay under 0.75 ("use atomics" against
"avoid atomics": 0.25), whereas whole texts of true duplicates score only
~0.6. Conservative on purpose: a missed duplicate costs a second entry, a
wrong merge would credit one strategy with another's evidence. The stored one
then gains the new evidence; a curated seed keeps its words, a learned one
takes the text of whichever run measured the better speedup.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .confidence import ConfidencePolicy, confidence
from .filters import Filters
from .model import Evidence, Strategy
from .ranking.embed import Embedder, vector_tag
from .retrieval import ensure_vectors
from .store import Store

DEFAULT_THRESHOLD = 0.8
NEAREST = 20  # stored strategies, nearest by full text, whose titles are compared


@dataclass
class Merged:
    strategy: Strategy
    created: bool
    matched_by: str = ""        # "id" | "title" | "embedding" | "" when created
    similarity: float | None = None


def _title(s: Strategy) -> str:
    return " ".join(s.title.lower().split())


def _best(evidence: list[Evidence]) -> float:
    return max((e.speedup for e in evidence if e.speedup is not None), default=0.0)


def _find(store: Store, embedder: Embedder, s: Strategy, vector: np.ndarray, threshold: float
          ) -> tuple[Strategy | None, str, float | None]:
    same = store.get(s.id)
    if same is not None:
        return same, "id", None
    candidates = store.candidates(Filters.of(op_families=s.families))
    for c in candidates:
        if _title(c.strategy) == _title(s):
            return c.strategy, "title", None
    if candidates:
        nearest = np.argsort(-(ensure_vectors(store, embedder, candidates) @ vector))[:NEAREST]
        titles = embedder.embed([s.title] + [candidates[i].strategy.title for i in nearest])
        sims = titles[1:] @ titles[0]
        best = int(sims.argmax())
        if sims[best] >= threshold:
            return candidates[nearest[best]].strategy, "embedding", round(float(sims[best]), 4)
    return None, "", None


def _union(first: list[str], second: list[str]) -> list[str]:
    return first + [x for x in second if x not in first]


def _fold(target: Strategy, new: Strategy, now: float) -> bool:
    """Fold ``new`` into ``target``; True when target's text changed (it needs a new vector)."""
    seen = {e.key for e in target.evidence}
    better = _best(new.evidence) > _best(target.evidence)
    target.evidence += [e for e in new.evidence if e.key not in seen]
    target.updated_at = now
    if target.source == "seed":
        return False
    a, b = target.applies_to, new.applies_to
    a["op_families"] = _union(a.get("op_families", []), b.get("op_families", []))
    a["backends"] = _union(a.get("backends", []), b.get("backends", []))
    a["dtypes"] = _union(a.get("dtypes", []), b.get("dtypes", []))
    if better and new.source == target.source and new.summary != target.summary:
        target.summary, target.rationale = new.summary, new.rationale or target.rationale
        a["shape_regime"] = b.get("shape_regime", "") or a.get("shape_regime", "")
        return True
    return False


def merge(store: Store, new: list[Strategy], embedder: Embedder, *, threshold: float = DEFAULT_THRESHOLD,
          now: float | None = None, policy: ConfidencePolicy = ConfidencePolicy()) -> list[Merged]:
    """Add each of ``new`` to ``store`` or fold it into its duplicate; confidences are recomputed."""
    now = time.time() if now is None else now
    out = []
    for s in new:
        vector = embedder.embed([s.text()])[0]
        target, how, sim = _find(store, embedder, s, vector, threshold)
        if target is None:
            s.confidence = confidence(s, now, policy=policy)
            store.put(s, vector, vector_tag(embedder, s.text()))
            out.append(Merged(s, True))
            continue
        changed = _fold(target, s, now)
        target.confidence = confidence(target, now, policy=policy)
        text = target.text()
        store.put(target, *((embedder.embed([text])[0], vector_tag(embedder, text)) if changed else (None, None)))
        out.append(Merged(target, False, how, sim))
    return out
