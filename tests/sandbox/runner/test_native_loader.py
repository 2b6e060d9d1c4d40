"""The native loader (sandbox/runner/native/library.py) with the real compiler, and the
launch counter's wrapping of it (sandbox/runner/guards/): what the judge
relies on when a candidate calls C."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator

import pytest
import torch

from sandbox.runner import guards
from sandbox.runner.native import library as native

SRC = """
#include <stdint.h>
/* TAG */
void axpy(const float* x, float* y, int64_t n, float a) {
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + y[i];
}
double total(const float* x, int64_t n) {
    double s = 0; for (int64_t i = 0; i < n; i++) s += x[i]; return s;
}
"""
PROTOS = ["void axpy(const float* x, float* y, int64_t n, float a)", "double total(const float* x, int64_t n)"]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Iterator[str]:
    monkeypatch.setenv("KFORGE_NATIVE_CACHE", str(tmp_path))
    monkeypatch.setattr(native, "prebuilt", None)
    yield str(tmp_path)


def test_calls_check_arguments_before_native_code_runs(cache: str) -> None:
    lib = native.load_c(SRC, PROTOS, name="axpy")
    x, y = torch.ones(5), torch.zeros(5)
    lib.axpy(x, y, 5, 2.0)
    assert torch.equal(y, torch.full((5,), 2.0)) and lib.total(x, 5) == 5.0
    for args, words in [((x, y, 5), "takes 4 arguments"), ((x.double(), y, 5, 1.0), "torch.float32"),
                        ((x, torch.zeros(5, 2)[:, 0], 5, 1.0), "not contiguous"), ((x, y, 5.0, 1.0), "pass an int"),
                        ((x, 3, 5, 1.0), "must be a tensor")]:
        with pytest.raises(native.NativeArgumentError, match=words):
            lib.axpy(*args)


def test_compile_errors_are_the_compilers(cache: str) -> None:
    with pytest.raises(native.NativeBuildError, match=r"bad\.c:2:\d+: error"):
        native.load_c("#include <stdint.h>\nvoid f(float* y) { y[0] = ; }\n", ["void f(float* y)"], name="bad")


def test_undeclared_functions_do_not_compile_in_c(cache: str) -> None:
    with pytest.raises(native.NativeBuildError, match="implicit declaration of function .getpid"):
        native.load_c("void f(float* y) { y[0] = (float)getpid(); }\n", ["void f(float* y)"], name="undeclared")


def test_under_the_judge_only_prebuilt_sources_load(cache: str, monkeypatch) -> None:
    src = SRC.replace("TAG", uuid.uuid4().hex)
    path = native.build(src, "c", "axpy")
    monkeypatch.setattr(native, "prebuilt", {native.source_key(src, "c"): path})
    assert native.load_c(src, PROTOS).total(torch.ones(3), 3) == 3.0
    with pytest.raises(native.NativeError, match="not built by the judge"):
        native.load_c(src + "\n", PROTOS)


def test_no_ctypes_object_is_reachable_without_dunders(cache: str) -> None:
    lib = native.load_c(SRC, PROTOS)
    fn = lib.axpy
    public = [getattr(fn, a) for a in dir(fn) if not a.startswith("__")]
    public += [getattr(lib, a) for a in dir(lib)]
    assert not any(type(v).__module__.startswith("ctypes") for v in public)
    assert not hasattr(fn, "_cfunc")


def test_counter_counts_native_calls_and_the_ablation_poisons_what_they_wrote(cache: str, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "kforge_native", sys.modules.get("kforge_native"))  # restored afterwards
    counter = guards.launches.LaunchCounter()
    counter._install_native()
    shim = sys.modules["kforge_native"]
    lib = shim.load_c(SRC.replace("TAG", uuid.uuid4().hex), PROTOS)
    x, y = torch.ones(4), torch.zeros(4)
    lib.axpy(x, y, 4, 1.0)
    assert counter.names == {"native:axpy": 1} and torch.equal(y, torch.ones(4))
    out = torch.empty(4)
    with torch.no_grad(), guards.ablation.Ablation([x]) as mode:
        counter.ablation = mode
        fresh = torch.empty(4)
        lib.axpy(x, fresh, 4, 1.0)
        total = lib.total(x, 4)
        counter.ablation = None
    # The calls ran (a scalar result is the real one: no sentinel to read), what they wrote is poisoned.
    assert mode.skipped == 2 and torch.isnan(fresh).all() and total == 4.0
    assert torch.equal(x, torch.ones(4)), "inputs are not poisoned"
    with pytest.raises(native.NativeArgumentError):  # the same errors as a real call, even when skipped
        counter.ablation = guards.ablation.Ablation([])
        lib.axpy(x, out, 4)
    counter.ablation = None
    assert counter.count == 4
