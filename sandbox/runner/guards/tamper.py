"""Functions the judge relies on, replaced; the op recorder turned off."""

from __future__ import annotations

import functools
import os
import threading
import time
from typing import Any

import torch


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

    for mod_name, names in (
            ("sandbox.runner.measure.timing", ("time_cpu", "time_cuda", "run_null", "_perf_ns", "_cpu_ns", "_usage",
                                               "_cuda_sync", "_Event", "_elapsed", "_record", "cuda_rep",
                                               "l2_flush_buffer")),
            ("sandbox.runner.measure.timed", ("emit_timing", "replay", "note_inputs", "same_bits", "touched",
                                              "load_set", "_copy", "_clone", "_equal", "flatten_output")),
            ("sandbox.runner.phases.harness", ("snapshot_outputs", "sync", "_clone", "_to", "_detach", "_copy", "build",
                                               "to_cpu", "taken", "snapshot_taken", "flatten_output", "send_now")),
            # what sends tensors to the judge: a patched one could send back an input's
            # file as it came when the call had written to the input
            ("sandbox.runner.channel.shared", ("export", "_export", "_same_file", "_mapping_untouched", "_memfd",
                                               "seal", "send")),
            ("sandbox.runner.guards", ("stray_work", "native_threads", "busy_threads", "_thread_stat")),
            ("sandbox.runner.measure.provenance", ("Provenance", "reachable_tensors", "cost", "work_of",
                                                   "tensors_in"))):
        module = _sys.modules.get(mod_name)
        if module is not None:
            for n in names:
                watched[f"{mod_name}.{n}"] = (module, n)
    harness = _sys.modules.get("sandbox.runner.phases.harness")
    if harness is not None:  # a candidate job's state: its methods make every recorder and tamper list
        for n in ("recorder", "tamper"):
            watched[f"_Candidate.{n}"] = (harness._Candidate, n)
    prov = _sys.modules.get("sandbox.runner.measure.provenance")
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
