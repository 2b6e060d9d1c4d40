"""Hybrid retrieval over the seed: relevant strategies first, modes, structured filters, and the
planner's StrategySource contract."""

from __future__ import annotations

import pytest

from knowledge_base import Filters, HashingEmbedder, KnowledgeBase, seed_strategies
from knowledge_base.ranking.bm25 import BM25, tokenize

from .samples import SOFTMAX_REF, softmax_analysis

TYPICAL = [
    ("sum over dim 0 of a tall matrix", "seed-reduce-leading-dims"),
    ("matmul followed by bias add and relu", "seed-epilogue-fusion"),
    ("cumulative sum along each row", "seed-parallel-scan"),
    ("2D max pooling with padding", "seed-pool-window-tiles"),
    ("non-deterministic results from atomic adds in a reduction", "seed-avoid-atomics"),
    ("attention without writing the N x N score matrix", "seed-fused-attention"),
    ("convolution as a matrix multiply", "seed-implicit-gemm-conv"),
    ("fp16 matmul on A100 tensor cores", "seed-tensor-cores"),
    ("layer norm mean and variance in one pass", "seed-single-pass-norm-stats"),
]


def test_seed_is_curated_and_tagged() -> None:
    seeds = seed_strategies()
    assert len(seeds) >= 20 and len({s.id for s in seeds}) == len(seeds)
    for s in seeds:
        assert s.source == "seed" and s.id.startswith("seed-")
        assert s.applies_to["op_families"] and s.applies_to["backends"]
        assert len(s.summary) > 80 and len(s.rationale) > 60, s.id


@pytest.mark.parametrize(("query", "expected"), TYPICAL)
def test_hybrid_ranks_the_obvious_strategy_first(kb: KnowledgeBase, query: str, expected: str) -> None:
    hits = kb.search(query, k=5)
    assert hits[0]["id"] == expected, [h["id"] for h in hits]
    assert set(hits[0]["parts"]) >= {"embedding", "keyword", "confidence", "family"}


def test_modes_rank_by_their_own_part(kb: KnowledgeBase) -> None:
    query = "online softmax with a running max"
    by_embedding = kb.search(query, k=5, mode="embedding")
    assert [h["score"] for h in by_embedding] == sorted((h["parts"]["embedding"] for h in by_embedding), reverse=True)
    by_keyword = kb.search(query, k=5, mode="keyword")
    assert [h["score"] for h in by_keyword] == sorted((h["parts"]["bm25"] for h in by_keyword), reverse=True)
    assert by_keyword[0]["id"] == by_embedding[0]["id"] == "seed-online-softmax"
    strategy, score, parts = kb.retriever.search(query, k=1)[0]  # hits unpack as (Strategy, score, parts)
    assert strategy.id == "seed-online-softmax" and score > 0 and parts["embedding"] > 0.5
    with pytest.raises(ValueError, match="mode"):
        kb.search(query, mode="fuzzy")  # type: ignore[arg-type]


def test_structured_filters_are_hard(kb: KnowledgeBase) -> None:
    triton = kb.search("shared memory bank conflicts in a transpose", k=10, filters={"backend": "triton"})
    assert "seed-avoid-bank-conflicts" not in [h["id"] for h in triton]  # a CUDA-only strategy
    cuda = kb.search("shared memory bank conflicts in a transpose", k=3, filters={"backend": "cuda"})
    assert cuda[0]["id"] == "seed-avoid-bank-conflicts"
    old_gpu = kb.search("tensor core mma for an fp16 matmul", k=10, filters=Filters.of(arch="sm_61"))
    assert "seed-tensor-cores" not in [h["id"] for h in old_gpu]
    softmax_only = kb.search("tiling", k=40, filters={"op_families": ["softmax"]})
    assert softmax_only and all("softmax" in h["applies_to"]["op_families"] or "any" in h["applies_to"]["op_families"]
                                for h in softmax_only)
    assert "seed-split-k" not in [h["id"] for h in softmax_only]


def test_retrieve_is_the_planners_strategy_source(kb: KnowledgeBase) -> None:
    got = kb.retrieve(softmax_analysis(), SOFTMAX_REF, "triton", k=5)
    assert len(got) == 5
    for item in got:
        assert set(item) == {"id", "title", "summary", "source", "confidence", "evidence_summary", "score"}
        assert item["source"] == "seed" and item["evidence_summary"] == "curated by the team; no runs yet"
    ids = [item["id"] for item in got]
    assert {"seed-online-softmax", "seed-row-per-program"} & set(ids)
    assert "seed-fp32-accumulation" not in ids  # a half-precision strategy; the inputs are float32
    assert all(s["id"] not in ("seed-split-k", "seed-implicit-gemm-conv") for s in got)


def test_keyword_tokenizer_and_bm25() -> None:
    assert tokenize("GEMM with fp16 loads") == ["gemm", "matmul", "fp16", "half", "float16", "load"]
    assert tokenize("LayerNorm tiles") == ["layernorm", "layer", "norm", "tile"]
    index = BM25([tokenize("online softmax"), tokenize("tiled matmul"), tokenize("softmax softmax rows")])
    scores = index.scores(tokenize("matmul"))
    assert scores.argmax() == 1 and scores[0] == scores[2] == 0.0


def test_hashing_embedder_is_a_deterministic_fallback(tmp_path) -> None:
    from knowledge_base import FileStore

    emb = HashingEmbedder()
    a, b = emb.embed(["warp shuffle reduction"]), emb.embed(["warp shuffle reduction"])
    assert (a == b).all() and abs(float((a * a).sum()) - 1.0) < 1e-5
    kb = KnowledgeBase(FileStore(tmp_path / "h.sqlite"), emb)
    assert kb.embedder_name == "hashing-512"
    assert kb.search("cumulative sum scan along rows", k=3)[0]["id"] == "seed-parallel-scan"
