"""Fixtures for the knowledge base: one embedder per session (the model loads once) and a fresh
seeded store per test (seeding reads the shipped seed vectors, so it costs no model time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_base import Embedder, FileStore, KnowledgeBase, load_embedder


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return load_embedder()


@pytest.fixture
def kb(tmp_path: Path, embedder: Embedder) -> KnowledgeBase:
    return KnowledgeBase(FileStore(tmp_path / "kb.sqlite"), embedder)
