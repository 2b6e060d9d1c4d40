"""One module per family of starter kernels. Each has ``render(match, params) -> str``,
a complete candidate file, and ``PARAM_SPACE``, the launch parameters to autotune over
(best guess first)."""

from __future__ import annotations

from types import ModuleType

from . import elementwise, matmul, norm, reduction, softmax

FAMILIES: dict[str, ModuleType] = {
    "elementwise": elementwise,
    "softmax": softmax,
    "norm": norm,
    "reduction": reduction,
    "matmul": matmul,
}
