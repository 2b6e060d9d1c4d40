"""What a candidate's source may not do, read from its syntax tree (never run).

The launch counter, the op recorder and the tamper guard live in the
candidate's own process, so code that can reach them can forge them: walk the
caller's frames to the result channel, find the counter on the gc heap, pop
the op recorder off torch's dispatch stack, patch a clock. Reaching them takes
introspection that a kernel never needs, and this check finds it in the text
the judge holds, where the candidate cannot change what is seen. Obfuscation
(``exec``, ``__import__``, ``getattr`` with a computed name on a module,
dunder walks) is itself a finding, so hiding a banned name costs a finding too.

Code under ``if __name__ == "__main__":`` never runs in the judge and is not read.
C++ sources (strings passed to ``load_inline``) are scanned for calls that
bypass torch's dispatcher or reach into the Python interpreter.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from . import gpu as policy_gpu

# Top-level modules a candidate may not import, and why.
_MODULES: dict[str, str] = {
    **dict.fromkeys(("gc", "inspect", "traceback", "weakref", "tracemalloc", "code", "codeop", "dis", "pdb", "bdb",
                     "faulthandler"), "introspects the interpreter (frames, heap, stack)"),
    **dict.fromkeys(("ctypes", "_ctypes", "cffi", "mmap", "resource", "posix", "_posixsubprocess", "pty"),
                    "reaches raw memory or the OS below Python"),
    **dict.fromkeys(("importlib", "builtins", "imp", "runpy", "pkgutil", "zipimport", "marshal", "pickle",
                     "dill", "cloudpickle"), "loads or rewrites code at run time"),
    **dict.fromkeys(("threading", "_thread", "multiprocessing", "concurrent", "subprocess", "asyncio", "sched",
                     "signal", "atexit"), "runs work outside the forward call"),
    **dict.fromkeys(("socket", "ssl", "http", "urllib", "requests"), "uses the network"),
    **dict.fromkeys(("sandbox", "app", "agents", "knowledge_base", "taxonomy", "kforge"), "imports the judge's own code"),
    **dict.fromkeys(("numpy", "struct", "array"), "computes on tensor memory outside torch's dispatcher, where "
                    "the judge records where output values come from"),
}
# Submodules of allowed packages that are not allowed.
_SUBMODULES: dict[str, str] = {
    "torch._C": "reaches torch's C internals (dispatch stack, modes)",
    "torch.utils._python_dispatch": "manipulates torch's dispatch modes",
    "torch.overrides": "manipulates torch's function modes",
    "torch._dynamo": "hands the computation to torch's compiler",
    "torch._inductor": "hands the computation to torch's compiler",
    "torch.compiler": "hands the computation to torch's compiler",
    "torch.testing": "the judge compares outputs, not the candidate",
    "torch.multiprocessing": "runs work outside the forward call",
}
# Names that are banned as calls wherever they appear.
_CALLS: dict[str, str] = {
    **dict.fromkeys(("exec", "eval", "compile", "__import__", "breakpoint"), "runs code built at run time"),
    **dict.fromkeys(("globals", "locals", "vars"), "reads namespaces it does not own"),
    "id": "takes an object's memory address (a cache key or a raw pointer)",
}
# Attributes that yield a raw memory address (an integer a native kernel could dereference).
_ADDRESS_ATTRS = ("data_ptr", "storage", "_storage", "_cdata", "__array_interface__", "__cuda_array_interface__",
                  "_base_ptr", "unsafe_ptr")
# Attributes banned on any object: frames, code objects, module tables, heap walks.
_ATTRS: dict[str, str] = {
    **dict.fromkeys(("f_back", "f_locals", "f_globals", "f_code", "f_builtins", "f_trace", "gi_frame", "cr_frame",
                     "ag_frame", "tb_frame", "tb_next", "_getframe", "_current_frames", "settrace", "setprofile",
                     "get_objects", "get_referrers", "get_referents"), "walks frames or the heap"),
    **dict.fromkeys(("meta_path", "path_hooks"), "reads or rewrites the module table"),
    "_exit": "ends the process without returning (fake reports)",
    **dict.fromkeys(_ADDRESS_ATTRS,
                    "takes a raw memory address: memory reaches a kernel only as a tensor argument, where the judge "
                    "sees what it reads and writes"),
    **dict.fromkeys(("tolist", "numpy", "untyped_storage", "_typed_storage", "frombuffer", "from_numpy",
                     "from_dlpack", "__dlpack__", "from_file"),
                    "moves tensor values past torch's dispatcher (the judge records where output values come from)"),
    "_C": "reaches torch's C internals (dispatch stack, modes)",
    "_python_dispatch": "manipulates torch's dispatch modes",
    "_disable_current_modes": "hides torch ops from the judge",
    "_DisableTorchDispatch": "hides torch ops from the judge",
    **dict.fromkeys(("_invoke", "_functions", "_cfunc", "_handle", "_FuncPtr", "_objects", "_b_base_",
                     "_as_parameter_", "_func_ptr"), "reaches the native loader's internals (raw ctypes calls, "
                    "uncounted launches)"),
}
# Attributes banned on one module only (``model.modules()`` and ``re.compile`` are fine).
_ON_MODULE = {"sys.modules": "reads or rewrites the module table",
              "torch.compile": "hands the computation to torch's compiler"}
# Attributes banned on the ``os`` / ``sys`` modules only (ordinary names elsewhere).
_OS_ATTRS = {"fork", "forkpty", "system", "popen", "kill", "killpg", "spawnl", "spawnv", "spawnve", "spawnvp",
             "posix_spawn", "posix_spawnp", "execv", "execve", "execvp", "execl", "execlp", "setsid", "exit",
             "register_at_fork", "abort", "write", "writev", "pwrite", "dup", "dup2", "fdopen", "sendfile",
             "openpty", "fstat"}
# Dunder attributes honest code uses; any other dunder access is a finding.
_DUNDERS_OK = {"__init__", "__name__", "__qualname__", "__doc__", "__class__", "__call__", "__len__", "__repr__",
               "__str__", "__getitem__", "__setitem__", "__iter__", "__next__", "__enter__", "__exit__",
               "__version__", "__file__", "__module__", "__annotations__", "__eq__", "__hash__", "__contains__",
               "__add__", "__mul__", "__matmul__", "__neg__", "__float__", "__int__", "__bool__", "__index__"}
# Module attributes that may be assigned: torch's numeric flags.
_ASSIGNABLE = ("torch.backends.", "torch._dynamo.config.")
_CPP = [
    (re.compile(r"\bat::(native|cpu)::"), "calls ATen kernels directly, bypassing the dispatcher the judge watches"),
    (re.compile(r"::redispatch\b|\bExcludeDispatchKeyGuard\b|\bDispatchKey::Python\b|_set_dispatch_mode"),
     "switches off torch's dispatch keys (hides ops from the judge)"),
    (re.compile(r"\bPy(Run|Eval|Import|GC|Frame|Sys|Object_GetAttr|Object_SetAttr)_?\w*|\bpy::(module_?::import|eval|exec)\b"),
     "reaches into the Python interpreter from C++"),
    (re.compile(r"\b(fork|vfork|execv|execve|system|popen|dlopen|dlsym|ptrace|pthread_create)\s*\("),
     "starts processes, threads or loads code from C++"),
    (re.compile(r"/proc/"), "reads process internals (descriptors, memory)"),
]


@dataclass(frozen=True)
class Finding:
    line: int
    text: str


def _is_main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators))


class _Reader(ast.NodeVisitor):
    def __init__(self, own_names: set[str]) -> None:
        self.found: list[Finding] = []
        self.modules: dict[str, str] = {}  # local name -> module path
        self.own_names = own_names  # names the file binds itself (a variable called `vars` is fine)

    def add(self, node: ast.AST, text: str) -> None:
        self.found.append(Finding(getattr(node, "lineno", 0), text))

    def _module_ok(self, node: ast.AST, path: str) -> None:
        top = path.split(".")[0]
        if top in _MODULES:
            self.add(node, f"imports {path}: {_MODULES[top]}")
            return
        for banned, why in _SUBMODULES.items():
            if path == banned or path.startswith(banned + "."):
                self.add(node, f"imports {path}: {why}")
                return

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._module_ok(node, alias.name)
            local = alias.asname or alias.name.split(".")[0]
            self.modules[local] = alias.name if alias.asname else local

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.add(node, "relative import: a candidate is one file")
            return
        base = node.module or ""
        self._module_ok(node, base)
        for alias in node.names:
            full = f"{base}.{alias.name}"
            if alias.name == "*":
                self.add(node, f"imports * from {base}: names must be visible to the judge")
                continue
            self._module_ok(node, full)
            if alias.name in _ATTRS or full in _ON_MODULE:
                self.add(node, f"imports {full}: {_ATTRS.get(alias.name) or _ON_MODULE[full]}")
            if base in ("os", "sys") and alias.name in _OS_ATTRS:
                self.add(node, f"imports {full}: controls processes (work outside forward, fake exits)")
            self.modules[alias.asname or alias.name] = full

    def _resolve(self, node: ast.AST) -> str | None:
        """Dotted path with the local alias of an imported module expanded."""
        dotted = policy_gpu.dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if head in self.modules:
            return self.modules[head] + ("." + rest if rest else "")
        return None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = node.attr
        path = self._resolve(node)
        if name in _ATTRS or path in _ON_MODULE:
            self.add(node, f"uses .{name}: {_ATTRS.get(name) or _ON_MODULE[path]}")
        elif name.startswith("__") and name.endswith("__") and name not in _DUNDERS_OK:
            self.add(node, f"uses .{name}: reaches interpreter internals")
        elif path and path.split(".")[0] in ("os", "sys", "posix") and name in _OS_ATTRS:
            self.add(node, f"uses {path}: controls processes (work outside forward, fake exits)")
        elif path:
            for banned, why in _SUBMODULES.items():
                if path == banned or path.startswith(banned + "."):
                    self.add(node, f"uses {path}: {why}")
                    break
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in ("__builtins__", "__loader__", "__spec__"):
            self.add(node, f"uses {node.id}: reaches interpreter internals")
        elif node.id in _CALLS and isinstance(node.ctx, ast.Load) and node.id not in self.own_names:
            self.add(node, f"uses {node.id}(): {_CALLS[node.id]}")

    def visit_Call(self, node: ast.Call) -> None:
        fn = node.func
        if isinstance(fn, ast.Name) and fn.id in ("getattr", "setattr", "delattr") and len(node.args) >= 2:
            self._dynamic_attr(node, fn.id)
        if isinstance(fn, ast.Name) and fn.id == "open" and "open" not in self.own_names and node.args \
                and not (isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            self.add(node, "opens a computed path or a file descriptor (the result channel is one)")
        self.generic_visit(node)

    def _dynamic_attr(self, node: ast.Call, fn: str) -> None:
        target, name = node.args[0], node.args[1]
        # Computed names on triton's modules only reach kernel-side dtypes and builtins (``getattr(tl, "float16")``).
        on_module = self._resolve(target) is not None and not (self._resolve(target) or "").startswith("triton")
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            attr = name.value
            if f"{self._resolve(target)}.{attr}" in _ON_MODULE:
                self.add(node, f"{fn}(..., {attr!r}): {_ON_MODULE[f'{self._resolve(target)}.{attr}']}")
            elif attr in _ATTRS or (attr.startswith("__") and attr not in _DUNDERS_OK):
                self.add(node, f"{fn}(..., {attr!r}): {_ATTRS.get(attr, 'reaches interpreter internals')}")
            elif fn in ("setattr", "delattr") and on_module:
                self.add(node, f"{fn}() on module {self._resolve(target)}: replaces what the judge relies on")
        elif on_module:
            self.add(node, f"{fn}() with a computed name on module {self._resolve(target)}: hides what it reaches")

    def _assigned(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._assigned(t, node)
            return
        if isinstance(target, ast.Attribute):
            path = self._resolve(target)
            if path and not path.startswith(_ASSIGNABLE):
                self.add(node, f"assigns {path}: replaces a function or value of an imported module")

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._assigned(t, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._assigned(node.target, node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._assigned(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            self._assigned(t, node)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        # ``operator.attrgetter("data_ptr")`` and friends: a raw-address attribute named in a string.
        if isinstance(node.value, str) and node.value in _ADDRESS_ATTRS:
            self.add(node, f"names {node.value!r}: {_ATTRS[node.value]}")
        if isinstance(node.value, str) and "/proc/" in node.value and len(node.value) <= 40:
            self.add(node, f"names {node.value!r}: reads process internals (descriptors, memory)")
        if isinstance(node.value, str) and len(node.value) > 40:
            for pattern, why in _CPP:
                hit = pattern.search(node.value)
                if hit:
                    line = node.lineno + node.value.count("\n", 0, hit.start())
                    self.found.append(Finding(line, f"C++ source uses {hit.group(0).strip()}: {why}"))


def read(tree: ast.Module) -> list[Finding]:
    """Findings in source order, one per line and rule."""
    own = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    own |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments)
            for a in n.args + n.posonlyargs + n.kwonlyargs}
    own |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    reader = _Reader(own)
    body = [stmt for stmt in tree.body if not _is_main_guard(stmt)]
    for stmt in body:
        reader.visit(stmt)
    # GPU-only exploit classes (side streams, graphs, L2 windows, TF32, raw allocations).
    gpu = policy_gpu.read(ast.Module(body=body, type_ignores=[]))
    reader.found += [Finding(line, text) for line, text in gpu]
    seen: dict[tuple[int, str], Finding] = {}
    for f in reader.found:
        seen.setdefault((f.line, f.text), f)
    return sorted(seen.values(), key=lambda f: f.line)


def findings(source: str, filename: str, tree: ast.Module | None = None) -> list[str]:
    """'file:line: text' for each finding; a file that does not parse has none
    here (the compile check reports it). Pass ``tree`` when it is parsed already."""
    if tree is None:
        try:
            tree = ast.parse(source, filename=filename)
        except SyntaxError:
            return []
    return [f"{filename}:{f.line}: {f.text}" for f in read(tree)]
