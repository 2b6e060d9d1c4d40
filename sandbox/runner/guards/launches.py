"""Counting custom-kernel launches (see the package docstring)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .ablation import Ablation


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

        from ..native import library as native
        from ..native import scratch

        shim = types.ModuleType("kforge_native", "Native CPU kernels (see docs/cpu_backend.md).")
        for name in ("NativeError", "NativeBuildError", "NativeArgumentError", "NativeLibrary"):
            setattr(shim, name, getattr(native, name))
        shim.load_c = self._wrap_native_loader(native.load_c)
        shim.load_cpp = self._wrap_native_loader(native.load_cpp)
        shim.scratch = scratch.scratch
        shim.__all__ = ["NativeError", "NativeBuildError", "NativeArgumentError", "NativeLibrary", "load_c", "load_cpp",
                        "scratch"]
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
