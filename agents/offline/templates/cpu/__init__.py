"""The C templates of the cpu backend, one module per family, with the same interface
as the Triton ones: ``render(match, params) -> str`` (a complete candidate that builds
its kernels with ``kforge_native.load_c``) and ``PARAM_SPACE`` (best guess first)."""

from __future__ import annotations

from types import ModuleType

from . import (
    argreduce,
    attention,
    channel_norm,
    conv,
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
