"""The knowledge base as the rest of KForge uses it.

``KnowledgeBase.retrieve`` is the planner's ``StrategySource``; ``learn_from``
is called after each job; ``archived`` hands a new job the best verified kernel
of the same (or a near-identical) problem; ``search`` / ``show`` / JSONL
export and import serve the CLI and the API.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .confidence import ConfidencePolicy, confidence, evidence_summary
from .distil import Summarise, distil
from .filters import Filters
from .merge import DEFAULT_THRESHOLD, merge
from .model import ArchiveEntry, Strategy
from .problem_identity import arch_of, dtypes_of, op_families, problem_signature, shape_regime
from .ranking.embed import Embedder, load_embedder
from .retrieval import Hit, Mode, Retriever, Weights
from .seed import load_seed
from .store import FileStore, Store


class UnknownStrategy(KeyError):
    """No strategy has this id."""


class KnowledgeBase:
    def __init__(self, store: Store, embedder: Embedder | None = None, *, seed: bool = True,
                 policy: ConfidencePolicy = ConfidencePolicy(), weights: Weights = Weights(),
                 merge_threshold: float = DEFAULT_THRESHOLD, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.embedder = embedder or load_embedder()
        self.policy, self.merge_threshold, self.clock = policy, merge_threshold, clock
        self.retriever = Retriever(store, self.embedder, weights, policy, clock)
        if seed:
            load_seed(store, self.embedder)

    @classmethod
    def open(cls, path: str | Path, embedder: Embedder | None = None, **kwargs: Any) -> KnowledgeBase:
        """A knowledge base in a SQLite file (created and seeded if new)."""
        return cls(FileStore(path), embedder, **kwargs)

    @property
    def embedder_name(self) -> str:
        return self.embedder.name

    # -- the planner's StrategySource ---------------------------------------------------------------------
    def retrieve(self, analysis: dict[str, Any], reference: str, backend: str, k: int = 5) -> list[dict[str, Any]]:
        """The top ``k`` strategies for this problem, each with where it came from and its evidence."""
        families = [f for f in op_families(analysis) if f != "other"]
        arch = arch_of(analysis, backend)
        dtypes = dtypes_of(analysis)
        filters = Filters.of(op_families=families, backend=backend, arch=arch, dtype=dtypes[0] if dtypes else None)
        hits = self.retriever.search(query_for(analysis, backend), filters, k)
        return [self._brief(h, arch) for h in hits]

    def _brief(self, hit: Hit, arch: str | None) -> dict[str, Any]:
        s = hit.strategy
        return {"id": s.id, "title": s.title, "summary": s.summary, "source": s.source,
                "confidence": hit.parts["confidence"], "evidence_summary": evidence_summary(s, arch),
                "score": hit.score}

    # -- the archive ----------------------------------------------------------------------------------------
    def archived(self, reference: str, backend: str | None = None, arch: str | None = None) -> ArchiveEntry | None:
        """The best archived kernel for this reference's signature: on ``arch`` if there is one, else the
        best measured elsewhere; None when the problem was never solved."""
        entries = [e for e in self.store.archive_get(problem_signature(reference))
                   if backend is None or e.backend == backend]
        if arch is not None and any(e.arch == arch for e in entries):
            entries = [e for e in entries if e.arch == arch]
        best: ArchiveEntry | None = None
        for e in entries:
            best = e if e.better_than(best) else best
        return best

    def _archive(self, trajectory: dict[str, Any], arch: str, backend: str, job_id: str) -> ArchiveEntry | None:
        passing = [a for r in trajectory.get("rounds", []) for a in r.get("attempts", [])
                   if a.get("verdict") == "pass" and a.get("code")]
        if not passing:
            return None
        measured = [a for a in passing if a.get("speedup") is not None]
        # Without a GPU nothing is measured: the first verified kernel stands, its speed unknown.
        best = max(measured, key=lambda a: float(a["speedup"])) if measured else passing[0]
        entry = ArchiveEntry(problem_signature(str(trajectory.get("reference", ""))),
                             str(trajectory.get("problem", "")), str(best["code"]), best.get("speedup"), arch,
                             backend, job_id, str(best["id"]), self.clock())
        current = next((e for e in self.store.archive_get(entry.signature)
                        if (e.backend, e.arch) == (backend, arch)), None)
        if not entry.better_than(current):
            return None
        self.store.archive_put(entry)
        return entry

    # -- learning ---------------------------------------------------------------------------------------------
    def learn_from(self, trajectory: dict[str, Any], analysis: dict[str, Any], arch: str, backend: str,
                   job_id: str, summarise: Summarise | None = None) -> dict[str, Any]:
        """Distil strategies from a finished search, merge them, and archive its best passing kernel."""
        if backend == "cpu" and arch == "cpu":  # native C: keyed by the CPU's ISA, not just "cpu"
            arch = arch_of(analysis, backend)
        now = self.clock()
        learned = distil(trajectory, analysis, arch, backend, summarise, job_id=job_id, now=now)
        merged = merge(self.store, learned, self.embedder, threshold=self.merge_threshold, now=now,
                       policy=self.policy)
        entry = self._archive(trajectory, arch, backend, job_id)
        return {
            "strategies": [{"id": m.strategy.id, "title": m.strategy.title, "source": m.strategy.source,
                            "created": m.created, "matched_by": m.matched_by, "similarity": m.similarity,
                            "evidence": len(m.strategy.evidence)} for m in merged],
            "archived": None if entry is None else {"signature": entry.signature, "attempt_id": entry.attempt_id,
                                                    "speedup": entry.speedup, "arch": entry.arch},
            "distilled_by": "llm" if summarise is not None else "templates and plans",
        }

    # -- CLI / API ----------------------------------------------------------------------------------------------
    def search(self, query: str, k: int = 5, filters: Filters | dict[str, Any] | None = None,
               mode: Mode = "hybrid") -> list[dict[str, Any]]:
        if isinstance(filters, dict):
            filters = Filters.of(**filters)
        hits = self.retriever.search(query, filters, k, mode)
        arch = filters.arch if filters else None
        return [{**self._brief(h, arch), "parts": h.parts, "applies_to": dict(h.strategy.applies_to)} for h in hits]

    def show(self, strategy_id: str, arch: str | None = None) -> dict[str, Any]:
        s = self.store.get(strategy_id)
        if s is None:
            raise UnknownStrategy(strategy_id)
        return {**s.to_dict(), "confidence": confidence(s, self.clock(), arch, self.policy),
                "evidence_summary": evidence_summary(s, arch)}

    def add(self, strategy: Strategy) -> Strategy:
        """Add a hand-written strategy (or fold it into its duplicate)."""
        return merge(self.store, [strategy], self.embedder, threshold=self.merge_threshold, now=self.clock(),
                     policy=self.policy)[0].strategy

    def export_jsonl(self, path: str | Path) -> int:
        return self.store.export_jsonl(path)

    def import_jsonl(self, path: str | Path) -> int:
        return self.store.import_jsonl(path)

    def stats(self) -> dict[str, Any]:
        strategies = self.store.all()
        by_source: dict[str, int] = {}
        for s in strategies:
            by_source[s.source] = by_source.get(s.source, 0) + 1
        return {"strategies": len(strategies), "by_source": by_source, "archived": len(self.store.archive_all()),
                "embedder": self.embedder.name}


def query_for(analysis: dict[str, Any], backend: str) -> str:
    """The retrieval query for a problem: its op families, the ops it runs (by time), sizes, target."""
    ops: list[str] = []
    for row in analysis.get("profile") or []:
        op = str(row.get("op", "")).removeprefix("aten::")
        if op and op not in ops:
            ops.append(op)
    for node in analysis.get("graph") or []:
        target = str(node.get("target", ""))
        if node.get("op") in ("call_function", "call_method", "call_module") and target not in ops:
            ops.append(target)
    families = " ".join(op_families(analysis))
    if backend == "cpu":
        return (f"{families} kernel: {' '.join(ops[:12])}. {shape_regime(analysis)}. "
                f"native C with OpenMP and SIMD on {arch_of(analysis, backend)}").strip()
    return (f"{families} kernel: {' '.join(ops[:12])}. {shape_regime(analysis)}. "
            f"{backend} on {analysis.get('hardware', analysis.get('device', ''))}").strip()
