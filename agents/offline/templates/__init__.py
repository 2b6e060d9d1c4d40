"""One module per family of starter kernels and backend. Each has ``render(match, params)
-> str``, a complete candidate file, and ``PARAM_SPACE``, the launch parameters to autotune
over (best guess first). The Triton templates (``triton/``) serve the triton and cuda
backends, the C templates (``cpu/``) the cpu backend; what both share sits here."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from ... import backends
from .pipeline import Pipeline

# The families, in the order the engine tries them: each is a Triton module in triton/ and a C
# module of the same name in cpu/, in the room ROOMS names (adding a family: docs/architecture.md).
NAMES: tuple[str, ...] = ("elementwise", "softmax", "norm", "reduction", "matmul", "pooling", "argreduce", "scan",
                          "channel_norm", "conv", "attention", "triangle", "cross_entropy", "concat",
                          "permute", "recurrent", "pad")


# Rooms of each backend's folder: families that work along rows (one output per row or
# window of a row) and products (a multiply-accumulate over a shared dimension); the
# elementwise, pooling and layout families sit at the top.
ROOMS: dict[str, tuple[str, ...]] = {
    "rows": ("softmax", "norm", "reduction", "argreduce", "scan", "channel_norm", "cross_entropy"),
    "products": ("matmul", "conv", "attention", "triangle", "recurrent"),
}
_ROOM = {name: room for room, names in ROOMS.items() for name in names}


def _modules(package: str) -> dict[str, ModuleType]:
    return {name: importlib.import_module(".".join(filter(None, (package, _ROOM.get(name), name)))) for name in NAMES}


FAMILIES: dict[str, ModuleType] = _modules(__name__ + ".triton")
CPU_FAMILIES: dict[str, ModuleType] = _modules(__name__ + ".cpu")

# every backend (agents/backends.py) gets its template set, plus the pipeline: a chain of
# the families above in one candidate
_SETS = {"triton": FAMILIES, "cpu": CPU_FAMILIES}
BACKENDS: dict[str, dict[str, Any]] = {
    spec.name: {**_SETS[spec.templates], "pipeline": Pipeline(_SETS[spec.templates], spec.name)}
    for spec in backends.BACKENDS.values()}


def families_for(backend: str) -> dict[str, Any]:
    """The templates that write kernels for ``backend``."""
    return BACKENDS[backends.check(backend).name]
