"""Keyword retrieval: Okapi BM25 over a small tokeniser that knows GPU-kernel
vocabulary (gemm is a matmul, layernorm is a layer norm, fp16 is half).
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np

_TOKEN = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)*")
_STOP = frozenset("a an and are as at be by for from in into is it of on or over per than that the this to "
                  "with when where which while use using each its not can".split())
# Spellings that mean the same thing; every token is indexed with its expansions.
_ALIASES: dict[str, tuple[str, ...]] = {
    "gemm": ("matmul",), "mm": ("matmul",), "bmm": ("matmul", "batched"), "linear": ("matmul",),
    "gemv": ("matmul", "matrix", "vector"), "matrix": ("matmul",),
    "layernorm": ("layer", "norm"), "rmsnorm": ("rms", "norm"), "groupnorm": ("group", "norm"),
    "batchnorm": ("batch", "norm"), "normalization": ("norm",), "normalisation": ("norm",),
    "normalize": ("norm",), "normalise": ("norm",),
    "fp16": ("half", "float16"), "float16": ("fp16",), "half": ("fp16",), "bf16": ("bfloat16",),
    "bfloat16": ("bf16",), "fp32": ("float32",), "float32": ("fp32",), "tf32": ("tensor", "core"),
    "sdpa": ("attention",), "mha": ("attention",), "flash": ("attention",),
    "conv2d": ("conv", "convolution"), "conv1d": ("conv", "convolution"), "convolution": ("conv",),
    "logsoftmax": ("log", "softmax"), "log_softmax": ("log", "softmax"),
    "logsumexp": ("log", "sum", "exp", "reduction"), "cumsum": ("scan", "prefix", "sum"),
    "atomicadd": ("atomic",), "atomics": ("atomic",), "shfl": ("shuffle", "warp"), "shuffles": ("shuffle",),
    "smem": ("shared", "memory"), "sram": ("shared", "memory"), "hbm": ("memory", "bandwidth"),
    "wgmma": ("tensor", "core"), "mma": ("tensor", "core"), "wmma": ("tensor", "core"),
    "tensorcore": ("tensor", "core"), "cta": ("block",), "threadblock": ("block",),
    "h100": ("sm_90", "hopper"), "a100": ("sm_80", "ampere"), "l4": ("sm_89", "ada"), "v100": ("sm_70", "volta"),
    "relu": ("elementwise", "activation"), "gelu": ("elementwise", "activation"),
    "silu": ("elementwise", "activation"), "sigmoid": ("elementwise", "activation"),
    "tanh": ("elementwise", "activation"), "maxpool": ("pool",), "avgpool": ("pool",), "pooling": ("pool",),
}


def _stem(word: str) -> str:
    """Plural and -ing/-ed endings folded, enough for "loads"/"load", "tiles"/"tiling"/"tiled"."""
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", "e"), ("s", "")):
        if len(word) > len(suffix) + 3 and word.endswith(suffix) and not word.endswith("ss"):
            return word[: -len(suffix)] + keep
    return word


def tokenize(text: str) -> list[str]:
    out: list[str] = []
    for raw in _TOKEN.findall(text.lower().replace("-", " ")):
        if raw in _STOP:
            continue
        out.append(_stem(raw))
        for alias in _ALIASES.get(raw, ()):
            out.append(_stem(alias))
    return out


class BM25:
    """Okapi BM25 (k1, b) over documents given as token lists."""

    def __init__(self, docs: list[list[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.tf = [Counter(d) for d in docs]
        self.len = np.array([len(d) for d in docs], np.float64)
        self.avg = float(self.len.mean()) if docs else 0.0
        df: Counter[str] = Counter()
        for counts in self.tf:
            df.update(counts.keys())
        n = len(docs)
        self.idf = {t: math.log(1.0 + (n - m + 0.5) / (m + 0.5)) for t, m in df.items()}

    def scores(self, query: list[str]) -> np.ndarray:
        out = np.zeros(len(self.tf), np.float64)
        if not self.tf:
            return out
        norm = self.k1 * (1.0 - self.b + self.b * self.len / max(self.avg, 1e-9))
        for term in set(query):
            idf = self.idf.get(term)
            if idf is None:
                continue
            tf = np.array([c.get(term, 0) for c in self.tf], np.float64)
            out += idf * tf * (self.k1 + 1.0) / (tf + norm)
        return out
