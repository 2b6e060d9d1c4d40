"""Observers installed in a runner child before untrusted code is loaded.

* ``LaunchCounter`` counts custom-kernel launches: Triton kernels (compiled or
  interpreted), functions of extensions built with ``load_inline``/``load``,
  and native functions loaded with ``kforge_native.load_c``/``load_cpp``.
* ``OpRecorder`` records the aten ops a forward call runs (a dispatch mode, so
  ops issued from C++ extensions are seen too).
* ``TamperGuard`` remembers the identity of the functions that timing, syncing
  and comparing rely on, and names those that were replaced.
* ``stray_work`` reports threads and processes still alive after forward.
* ``Ablation`` skips every custom kernel (and poisons fresh allocations) for
  one extra forward call: if the output is still right, the kernels are decoys.

All of this lives in the candidate's process, so it is evidence, not proof;
the judge decides on plain tensors it compares itself, and on CUDA the outside
clock corroborates the timings.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class LaunchCounter:
    def __init__(self) -> None:
        self.count = 0
        self.names: dict[str, int] = {}
        self.in_interpreter = False
        self.ablation: Ablation | None = None  # set: kernels are skipped, not run
        self.provenance: Any = None  # set (provenance.Provenance): launches are labelled with their arguments

    def _hit(self, name: str) -> None:
        self.count += 1
        self.names[name] = self.names.get(name, 0) + 1

    def install(self) -> None:
        import triton.runtime.jit as jit

        classes: list[Any] = [jit.JITFunction]
        try:
            from triton.runtime.interpreter import InterpretedFunction

            classes.append(InterpretedFunction)
        except ImportError:
            pass
        for cls in classes:
            cls.run = self._wrap_triton(cls.run, interpreted=cls is not jit.JITFunction)
        import torch.utils.cpp_extension as ext

        ext.load_inline = self._wrap_loader(ext.load_inline)
        ext.load = self._wrap_loader(ext.load)
        self._install_native()

    def _install_native(self) -> None:
        """``kforge_native`` as candidates import it: the loader's functions
        wrapped so that each native call counts (and is skipped in the ablation)."""
        import sys
        import types

        from . import native

        shim = types.ModuleType("kforge_native", "Native CPU kernels (see docs/cpu_backend.md).")
        for name in ("NativeError", "NativeBuildError", "NativeArgumentError", "NativeLibrary"):
            setattr(shim, name, getattr(native, name))
        shim.load_c = self._wrap_native_loader(native.load_c)
        shim.load_cpp = self._wrap_native_loader(native.load_cpp)
        shim.__all__ = ["NativeError", "NativeBuildError", "NativeArgumentError", "NativeLibrary", "load_c", "load_cpp"]
        sys.modules["kforge_native"] = shim

    def _wrap_native_loader(self, loader: Callable) -> Callable:
        counter = self

        @functools.wraps(loader)
        def counted_load(*args: Any, **kwargs: Any) -> Any:
            lib = loader(*args, **kwargs)
            table = lib._functions
            for fname in list(table):
                wrapped = counter._wrap_native_fn(table[fname])
                table[fname] = wrapped
                setattr(lib, fname, wrapped)
            return lib

        return counted_load

    def _wrap_native_fn(self, fn: Any) -> Callable:
        counter = self
        name = f"native:{fn.__name__}"

        def counted_native(*args: Any) -> Any:
            counter._hit(name)
            prov = counter.provenance
            if counter.ablation is None and prov is None:
                return fn(*args)
            fn.convert(args)  # argument errors before anything is touched
            if counter.ablation is not None:
                # The call runs for real (its return value is the real one: no
                # sentinel to read); what it wrote is then poisoned.
                result = fn(*args)
                counter.ablation.skip(fn.outputs(args))
                return result
            result, written = prov.native_call(lambda: fn(*args), fn.outputs(args))
            prov.kernel_launch(args, written)
            return result

        counted_native.__name__ = fn.__name__
        counted_native.__qualname__ = fn.__name__
        return counted_native

    def _wrap_triton(self, run: Callable, interpreted: bool) -> Callable:
        counter = self

        @functools.wraps(run)
        def counted_run(fn_self: Any, *args: Any, **kwargs: Any) -> Any:
            if not kwargs.get("warmup", False):
                counter._hit("triton:" + getattr(fn_self, "__name__", "kernel"))
            if counter.ablation is not None:
                counter.ablation.skip(list(args) + list(kwargs.values()))
                return None
            if not interpreted:
                result = run(fn_self, *args, **kwargs)
            else:
                # The interpreter moves tensors through aten ops of its own; those
                # are not the candidate's ops.
                counter.in_interpreter = True
                try:
                    result = run(fn_self, *args, **kwargs)
                finally:
                    counter.in_interpreter = False
            if counter.provenance is not None and not kwargs.get("warmup", False):
                values = list(args) + list(kwargs.values())
                counter.provenance.kernel_launch(values, counter.provenance.scratch(values))
            return result

        return counted_run

    def _wrap_loader(self, loader: Callable) -> Callable:
        counter = self

        @functools.wraps(loader)
        def counted_loader(*args: Any, **kwargs: Any) -> Any:
            module = loader(*args, **kwargs)
            for attr in dir(module):
                fn = getattr(module, attr)
                if attr.startswith("_") or not callable(fn):
                    continue
                setattr(module, attr, counter._wrap_ext(fn, f"ext:{attr}"))
            return module

        return counted_loader

    def _wrap_ext(self, fn: Callable, name: str) -> Callable:
        counter = self

        def counted_ext(*args: Any, **kwargs: Any) -> Any:
            counter._hit(name)
            if counter.ablation is not None:
                return counter.ablation.run_ext(fn, args, kwargs)
            result = fn(*args, **kwargs)
            if counter.provenance is not None:
                values = list(args) + list(kwargs.values())
                prov = counter.provenance
                prov.kernel_launch(values, prov.scratch(values) + prov.tensors_of(result))
            return result

        return counted_ext


_STRUCTURAL = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
    "full_like", "new_empty", "new_zeros", "new_ones", "new_full", "new_empty_strided", "fill_",
    "zero_", "copy_", "to", "_to_copy", "clone", "contiguous", "view", "_unsafe_view", "reshape",
    "_reshape_alias", "as_strided", "expand", "expand_as", "permute", "transpose", "t", "unsqueeze",
    "squeeze", "flatten", "unflatten", "slice", "select", "detach", "alias", "lift_fresh",
    "resolve_conj", "resolve_neg", "_local_scalar_dense", "item", "split", "split_with_sizes",
    "chunk", "narrow", "unbind", "view_as", "set_", "resize_", "is_nonzero", "numel", "size",
    "stride", "sym_size", "sym_stride", "sym_numel", "dim", "is_same_size", "_has_compatible_shallow_copy_type",
    "record_stream", "_pin_memory", "pin_memory", "cat", "stack", "arange", "scalar_tensor",
    "lift_fresh_copy", "_copy_from", "_copy_from_and_resize", "as_strided_",
}


class OpRecorder(TorchDispatchMode):
    """Counts aten ops by overload packet name, ignoring the interpreter's own."""

    def __init__(self, launches: LaunchCounter) -> None:
        super().__init__()
        self.launches = launches
        self.ops: dict[str, int] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if not self.launches.in_interpreter:
            name = func.overloadpacket.__name__
            if name not in _STRUCTURAL:
                self.ops[name] = self.ops.get(name, 0) + 1
        return func(*args, **(kwargs or {}))


_FRESH = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"}
_MADE = _FRESH | {"zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "new_zeros", "new_ones",
                  "new_full"}


def poison(value: Any) -> None:
    """Overwrite a tensor with values no kernel would compute (NaN, or a huge int)."""
    if isinstance(value, torch.Tensor) and value.numel():
        if value.dtype.is_floating_point or value.dtype.is_complex:
            value.fill_(float("nan"))
        elif value.dtype == torch.bool:
            value.fill_(True)
        else:
            value.fill_(torch.iinfo(value.dtype).max if value.dtype != torch.uint8 else 251)
    elif isinstance(value, (tuple, list)):
        for v in value:
            poison(v)


class Ablation(TorchDispatchMode):
    """One forward call with the custom kernels taken out.

    Triton launches are skipped and their scratch buffers poisoned; a
    compiled-extension function runs, then what it returns is poisoned (if it
    returns nothing, its scratch arguments are). Scratch means: not an input,
    parameter or buffer of the model, and not a result torch computed during
    this call -- so an output buffer kept from an earlier call cannot pass for
    this call's result. Fresh allocations (``torch.empty`` and friends) are
    poisoned as they are made, so memory that still holds an earlier result
    cannot either."""

    def __init__(self, keep: list[Any]) -> None:
        super().__init__()
        self.skipped = 0
        self._keep = {_storage(t) for t in keep if isinstance(t, torch.Tensor)}
        self._made: set[int] = set()  # factory results of this call
        self._computed: set[int] = set()  # other op results of this call

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if isinstance(out, torch.Tensor):
            if name in _MADE:
                self._made.add(_storage(out))
                if name in _FRESH:
                    poison(out)
            elif name not in _STRUCTURAL:
                self._computed.add(_storage(out))
        return out

    def _scratch(self, values: list[Any]) -> list[torch.Tensor]:
        out = []
        for v in values:
            if isinstance(v, torch.Tensor):
                key = _storage(v)
                if key not in self._keep and (key in self._made or key not in self._computed):
                    out.append(v)
        return out

    def skip(self, args: list[Any]) -> None:
        self.skipped += 1
        for t in self._scratch(args):
            poison(t)

    def run_ext(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        self.skipped += 1
        out = fn(*args, **kwargs)
        poison(self._scratch(list(args) + list(kwargs.values())) if out is None else out)
        return out


def _storage(t: torch.Tensor) -> int:
    try:
        return t.untyped_storage().data_ptr()
    except Exception:  # tensors without storage (subclasses): their own address
        return id(t)


def _watched() -> dict[str, tuple[Any, str]]:
    import triton
    import triton.runtime.jit as jit

    watched: dict[str, tuple[Any, str]] = {
        f"time.{n}": (time, n) for n in ("perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns")
    }
    for n in ("allclose", "isclose", "equal", "save", "load", "empty", "clone", "randn", "rand"):
        watched[f"torch.{n}"] = (torch, n)
    for n in ("clone", "cpu", "detach", "to", "__eq__", "equal", "allclose", "copy_", "contiguous", "numpy"):
        watched[f"torch.Tensor.{n}"] = (torch.Tensor, n)
    for n in ("synchronize", "Event", "current_stream", "Stream", "elapsed_time"):
        if hasattr(torch.cuda, n):
            watched[f"torch.cuda.{n}"] = (torch.cuda, n)
    watched["torch.cuda.Event.elapsed_time"] = (torch.cuda.Event, "elapsed_time")
    watched["torch.cuda.Event.record"] = (torch.cuda.Event, "record")
    watched["torch.nn.Module.__call__"] = (torch.nn.Module, "__call__")
    watched["torch.nn.Module._call_impl"] = (torch.nn.Module, "_call_impl")
    watched["torch.testing.assert_close"] = (torch.testing, "assert_close")
    watched["triton.runtime.jit.JITFunction.run"] = (jit.JITFunction, "run")
    watched["triton.testing.do_bench"] = (triton.testing, "do_bench")
    watched["threading.enumerate"] = (threading, "enumerate")
    watched["os.listdir"] = (os, "listdir")
    try:
        from triton.runtime.interpreter import InterpretedFunction

        watched["triton.InterpretedFunction.run"] = (InterpretedFunction, "run")
    except ImportError:
        pass
    # The harness's own clocks and copies: patching them would fake both the
    # reported times and the outside clock's phases.
    import sys as _sys

    for mod_name, names in (("sandbox.runner.timing", ("time_cpu", "time_cuda", "run_null", "_perf_ns", "_cpu_ns",
                                                        "_usage", "_cuda_sync", "_Event", "_elapsed", "_record")),
                            ("sandbox.runner.timed", ("emit_timing", "replay", "note_inputs", "same_bits", "touched",
                                                      "load_set", "_copy", "_clone", "_equal")),
                            ("sandbox.runner.harness", ("snapshot_outputs", "sync", "_clone", "_to",
                                                         "_detach", "_copy", "build", "to_cpu")),
                            ("sandbox.runner.guards", ("stray_work", "native_threads", "busy_threads", "_thread_stat")),
                            ("sandbox.runner.provenance", ("Provenance", "reachable_tensors", "cost", "work_of",
                                                           "tensors_in"))):
        module = _sys.modules.get(mod_name)
        if module is not None:
            for n in names:
                watched[f"{mod_name}.{n}"] = (module, n)
    prov = _sys.modules.get("sandbox.runner.provenance")
    if prov is not None:  # the recorder's own methods: replacing one would blind it
        for n in ("__torch_dispatch__", "kernel_launch", "summary", "__enter__", "__exit__", "_set", "_merge"):
            watched[f"Provenance.{n}"] = (prov.Provenance, n)
    import torch.utils._python_dispatch as dispatch

    watched["torch.utils._python_dispatch._disable_current_modes"] = (dispatch, "_disable_current_modes")
    return watched


class EvasionWatch:
    """Turning the op recorder off during forward is a cheat, not an optimisation."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def install(self) -> None:
        import torch.utils._python_dispatch as dispatch

        original = dispatch._disable_current_modes
        watch = self

        @functools.wraps(original)
        def watched_disable(*args: Any, **kwargs: Any) -> Any:
            watch.events.append("disabled the active dispatch modes (hides torch ops from the op recorder)")
            return original(*args, **kwargs)

        dispatch._disable_current_modes = watched_disable


def dispatch_depth() -> int:
    return int(torch._C._len_torch_dispatch_stack())


class TamperGuard:
    def __init__(self) -> None:
        self._watched = _watched()
        self._ids = {k: id(getattr(obj, attr, None)) for k, (obj, attr) in self._watched.items()}
        self._modules = {name: id(mod) for name, mod in _core_modules().items()}

    def changed(self) -> list[str]:
        out = [k for k, (obj, attr) in self._watched.items() if id(getattr(obj, attr, None)) != self._ids[k]]
        out += [f"sys.modules[{n!r}]" for n, mid in self._modules.items() if id(_core_modules().get(n)) != mid]
        return out


def _core_modules() -> dict[str, Any]:
    import sys

    return {n: sys.modules.get(n) for n in ("torch", "triton", "time", "threading", "torch.cuda", "torch.testing")}


def native_threads() -> set[int]:
    """The ids of this process's threads (native and Python alike)."""
    return {int(t) for t in os.listdir("/proc/self/task")}


def _thread_stat(tid: int) -> tuple[str, int] | None:
    """(state, user + system ticks) of one of this process's threads; None once it is gone."""
    try:
        with open(f"/proc/self/task/{tid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return None
    return fields[0], int(fields[11]) + int(fields[12])


def busy_threads(tids: set[int], settle_s: float = 0.02) -> list[int]:
    """Of threads that appeared during a call, those still working after it: running, or
    using CPU over ``settle_s``. A thread pool that a call started (OpenMP's team the first
    time a kernel's size crosses its parallel threshold; OpenBLAS and oneDNN run on it too)
    waits asleep once the call returns; work left running does not."""
    time.sleep(settle_s)  # an OpenMP worker spins briefly at the end of its region, then sleeps
    first = {t: _thread_stat(t) for t in tids}
    time.sleep(settle_s)
    busy = []
    for t, a in first.items():
        b = _thread_stat(t)
        if a is not None and b is not None and (b[0] == "R" or b[1] > a[1]):
            busy.append(t)
    return busy


def stray_work(py_threads_before: set[int], own_uid: int) -> dict[str, list[str]]:
    """Threads and processes of this child that outlived the forward call."""
    alive = [t for t in threading.enumerate() if t.ident not in py_threads_before and t.is_alive()]
    procs = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                if os.stat(f"/proc/{name}").st_uid == own_uid and own_uid != 0:
                    procs.append(name)
            except OSError:
                continue
    return {"threads": [t.name for t in alive], "processes": procs}
