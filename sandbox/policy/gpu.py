"""GPU-only exploit classes, found in the candidate's text (never run).

Some ways to look fast or right on a GPU leave no trace a CPU run can see, and
some leave none the GPU run's checks see reliably either: work on a side
stream nobody waits for, a CUDA graph captured once and replayed, an L2
access-policy window that keeps the inputs resident between timed calls,
TF32 or other lowered precision, and memory handed out uninitialised (or
wrapped around a raw pointer) that may still hold an earlier result. A kernel
does not need any of them to compute its output, so the judge rejects the
routes to them by name, in Python and in C++/CUDA sources, on every device.
Each finding names its class, e.g. ``(class side_stream)``.
"""

from __future__ import annotations

import ast
import re


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for an attribute chain on a name, else None (the Python policy uses it too)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id] + parts[::-1])
    return None


# class -> (why, dotted torch paths: the path itself or anything under it)
_PATHS: dict[str, tuple[str, tuple[str, ...]]] = {
    "side_stream": ("work on a stream other than the current one is not waited for by the timing",
                    ("torch.cuda.Stream", "torch.cuda.ExternalStream", "torch.cuda.stream", "torch.cuda.set_stream",
                     "torch.cuda.streams", "torch.Stream", "torch.cuda.default_stream")),
    "cuda_graph": ("a captured graph replays work recorded once instead of computing each call",
                   ("torch.cuda.CUDAGraph", "torch.cuda.graph", "torch.cuda.graphs",
                    "torch.cuda.make_graphed_callables", "torch.cuda.graph_pool_handle")),
    "lowered_precision": ("computes below the problem's precision (TF32 / reduced-precision reductions)",
                          ("torch.set_float32_matmul_precision", "torch.backends.cuda.matmul.allow_tf32",
                           "torch.backends.cudnn.allow_tf32", "torch.backends.cudnn.conv.fp32_precision",
                           "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
                           "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
                           "torch.backends.cuda.matmul.fp32_precision", "torch.backends.fp32_precision")),
    "uninitialised_memory": ("hands out raw allocator memory, which may still hold an earlier result",
                             ("torch.cuda.caching_allocator_alloc", "torch.cuda.caching_allocator_delete",
                              "torch.cuda.memory", "torch.cuda.MemPool", "torch.cuda.use_mem_pool",
                              "torch.cuda.change_current_allocator", "torch.cuda.CUDAPluggableAllocator")),
}
# Attributes that only make sense for the classes above, on any object.
_ATTRS = {"wait_stream": "side_stream", "capture_begin": "cuda_graph", "capture_end": "cuda_graph",
          "replay": "cuda_graph"}
# Modules that reach the CUDA runtime below torch (access-policy windows, persisting L2).
_MODULES = {"cuda": "l2_persist", "pycuda": "l2_persist", "cupy": "l2_persist", "numba": "l2_persist"}
_MODULE_WHY = "reaches the CUDA runtime below torch (L2 access-policy windows, persisting cache limits)"
# Triton's lowered-precision dot products.
_TF32_PRECISIONS = {"tf32", "tf32x3", "bf16x3", "bf16x6"}
# C++ / CUDA source text.
_CPP: list[tuple[str, re.Pattern[str]]] = [
    ("side_stream", re.compile(r"\bcudaStreamCreate\w*|\bgetStreamFromPool\b|\bsetCurrentCUDAStream\b|"
                               r"\bcudaStreamNonBlocking\b")),
    ("cuda_graph", re.compile(r"\bcudaGraph\w*|\bcudaStream(Begin|End)Capture\b|\bCUDAGraph\b")),
    ("l2_persist", re.compile(r"\bcudaStreamSetAttribute\b|\baccessPolicyWindow\b|\bcudaAccessProperty\w*|"
                              r"\bcudaLimitPersistingL2CacheSize\b|\bcudaCtxResetPersistingL2Cache\b|"
                              r"\bcudaDeviceSetLimit\b")),
    ("lowered_precision", re.compile(r"\bCUBLAS_TF32\w*|\bcublasSetMathMode\b|\bCUBLAS_COMPUTE_32F_FAST\w*|"
                                     r"\bprecision::tf32\b|\bsetAllowTF32\w*|\btf32\b")),
    ("uninitialised_memory", re.compile(r"\bcudaMalloc\w*|\bCUDACachingAllocator\b|\braw_alloc\b|\bfrom_blob\b")),
]
_CPP_WHY = {"side_stream": _PATHS["side_stream"][0], "cuda_graph": _PATHS["cuda_graph"][0],
            "l2_persist": "an L2 access-policy window keeps data resident between timed calls",
            "lowered_precision": _PATHS["lowered_precision"][0],
            "uninitialised_memory": _PATHS["uninitialised_memory"][0]}


def _text(what: str, cls: str, why: str) -> str:
    return f"{what}: {why} (class {cls})"


class _Reader(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: list[tuple[int, str]] = []
        self.aliases: dict[str, str] = {}
        self.safe: set[int] = set()  # nodes that raise precision (allow_tf32 = False, "highest")

    def add(self, node: ast.AST, text: str) -> None:
        self.found.append((getattr(node, "lineno", 0), text))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            top = alias.name.split(".")[0]
            if top in _MODULES:
                self.add(node, _text(f"imports {alias.name}", _MODULES[top], _MODULE_WHY))
            self.aliases[alias.asname or top] = alias.name if alias.asname else top

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if base.split(".")[0] in _MODULES:
            self.add(node, _text(f"imports from {base}", _MODULES[base.split('.')[0]], _MODULE_WHY))
        for alias in node.names:
            full = f"{base}.{alias.name}"
            self._path(node, full)
            self.aliases[alias.asname or alias.name] = full

    def _resolve(self, node: ast.AST) -> str | None:
        name = dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        return self.aliases[head] + ("." + rest if rest else "") if head in self.aliases else None

    def _path(self, node: ast.AST, path: str) -> bool:
        for cls, (why, paths) in _PATHS.items():
            if any(path == p or path.startswith(p + ".") for p in paths):
                self.add(node, _text(f"uses {path}", cls, why))
                return True
        return False

    def visit_Assign(self, node: ast.Assign) -> None:
        if isinstance(node.value, ast.Constant) and node.value.value is False:
            self.safe.update(id(t) for t in node.targets)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if id(node) in self.safe:
            return
        path = self._resolve(node)
        if not (path and self._path(node, path)) and node.attr in _ATTRS:
            cls = _ATTRS[node.attr]
            self.add(node, _text(f"uses .{node.attr}", cls, _PATHS[cls][0]))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if (self._resolve(node.func) == "torch.set_float32_matmul_precision" and node.args
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == "highest"):
            self.safe.add(id(node.func))
        for kw in node.keywords:
            value = kw.value
            constant = value.value if isinstance(value, ast.Constant) else None
            if kw.arg == "allow_tf32" and constant is not False:
                self.add(node, _text("passes allow_tf32", "lowered_precision", _PATHS["lowered_precision"][0]))
            elif kw.arg == "input_precision" and (constant is None or str(constant).lower() in _TF32_PRECISIONS):
                shown = repr(constant) if constant is not None else "a computed value"
                self.add(node, _text(f"passes input_precision={shown}", "lowered_precision",
                                     _PATHS["lowered_precision"][0]))
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and len(node.value) > 40:
            for cls, pattern in _CPP:
                hit = pattern.search(node.value)
                if hit:
                    line = node.lineno + node.value.count("\n", 0, hit.start())
                    self.found.append((line, _text(f"C++/CUDA source uses {hit.group(0)}", cls, _CPP_WHY[cls])))


def read(stmt: ast.AST) -> list[tuple[int, str]]:
    """(line, text) per finding in one statement of the candidate."""
    reader = _Reader()
    reader.visit(stmt)
    return reader.found
