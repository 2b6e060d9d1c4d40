"""One module per family of starter kernels. Each has ``render(match, params) -> str``,
a complete candidate file, and ``PARAM_SPACE``, the launch parameters to autotune over
(best guess first). Triton templates serve the triton and cuda backends; the C
templates of the cpu backend live in ``cpu/``."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from . import (
    argreduce,
    attention,
    channel_norm,
    conv,
    cpu,
    cross_entropy,
    elementwise,
    matmul,
    norm,
    pooling,
    reduction,
    scan,
    softmax,
    triangle,
)
from .pipeline import Pipeline

FAMILIES: dict[str, ModuleType] = {
    "elementwise": elementwise,
    "softmax": softmax,
    "norm": norm,
    "reduction": reduction,
    "matmul": matmul,
    "pooling": pooling,
    "argreduce": argreduce,
    "scan": scan,
    "channel_norm": channel_norm,
    "conv": conv,
    "attention": attention,
    "triangle": triangle,
    "cross_entropy": cross_entropy,
}

# every backend also has the pipeline: a chain of the families above in one candidate
BACKENDS: dict[str, dict[str, Any]] = {
    name: {**families, "pipeline": Pipeline(families, name)}
    for name, families in (("triton", FAMILIES), ("cuda", FAMILIES), ("cpu", cpu.FAMILIES))}


def families_for(backend: str) -> dict[str, Any]:
    """The templates that write kernels for ``backend``."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}: one of {', '.join(BACKENDS)}")
    return BACKENDS[backend]
