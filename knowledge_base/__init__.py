"""The knowledge base: strategies learned from runs (with their evidence and a
confidence that follows outcomes), a curated seed, the archive of the best
verified kernel per problem signature, and hybrid retrieval (embeddings +
BM25 + structured filters). A library: it imports nothing else of KForge.

    kb = KnowledgeBase.open("kb.sqlite")          # seeded on first open
    kb.retrieve(analysis, reference, "triton")    # the planner's StrategySource
    kb.learn_from(trajectory.to_dict(), analysis, "sm_90", "triton", job_id)
    kb.archived(reference)                        # the best kernel of this problem, or None
"""

from .confidence import ConfidencePolicy, confidence, evidence_summary
from .distil import distil
from .facade import KnowledgeBase, UnknownStrategy, query_for
from .filters import Filters
from .merge import merge
from .model import AppliesTo, ArchiveEntry, Evidence, Strategy, applies_to
from .problem_identity import arch_of, op_families, problem_signature
from .ranking.embed import Embedder, HashingEmbedder, MiniLMEmbedder, load_embedder
from .retrieval import Hit, Retriever, Weights
from .seed import load_seed, seed_strategies
from .store import FileStore, Indexed, Store

__all__ = [
    "AppliesTo", "ArchiveEntry", "ConfidencePolicy", "Embedder", "Evidence", "FileStore", "Filters",
    "HashingEmbedder", "Hit", "Indexed", "KnowledgeBase", "MiniLMEmbedder", "Retriever", "Store", "Strategy",
    "UnknownStrategy", "Weights", "applies_to", "arch_of", "confidence", "distil", "evidence_summary",
    "load_embedder", "load_seed", "merge", "op_families", "problem_signature", "query_for", "seed_strategies",
]
