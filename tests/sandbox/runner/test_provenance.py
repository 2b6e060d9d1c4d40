"""The provenance recorder (sandbox/runner/measure/provenance.py) and the shares the judge
computes from it (sandbox/verdict/work_share.py), in process: a real native kernel built
by gcc, called through the launch counter's wrapper, under the dispatch mode."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sandbox.runner import guards
from sandbox.runner.measure import provenance
from sandbox.runner.native import library as native
from sandbox.verdict import work_share

SRC = r"""
#include <stdint.h>
void relu_affine(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + 1.0f;
}
void unit(const float* x, float* s, int64_t n) { s[0] = 1.0f + 0.0f * x[0] * (float)n; }
void copy(const float* x, float* y, int64_t n) { for (int64_t i = 0; i < n; i++) y[i] = x[i]; }
"""
PROTOS = ["void relu_affine(const float* x, float* y, int64_t n)", "void unit(const float* x, float* s, int64_t n)",
          "void copy(const float* x, float* y, int64_t n)"]


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> tuple[guards.launches.LaunchCounter, dict]:
    lib = native.load(SRC, PROTOS, name="prov")
    counter = guards.launches.LaunchCounter()
    return counter, {name: counter._wrap_native_fn(getattr(lib, name)) for name in ("relu_affine", "unit", "copy")}


def record(counter: guards.launches.LaunchCounter, forward, x: torch.Tensor, keep=()) -> dict:
    mode = provenance.Provenance(counter, [x, *keep])
    with torch.no_grad(), mode:
        out = forward(x)
    return mode.summary(out)


def reference_work(x: torch.Tensor) -> dict:
    mode = provenance.Provenance(None, [x])
    with torch.no_grad(), mode:
        torch.relu(x) * 2.0 + 1.0
    return provenance.reference_work(mode)


def test_the_reference_work_is_counted_by_op() -> None:
    x = torch.randn(8, 16)
    work = reference_work(x)
    assert set(work["by_op"]) == {"relu", "mul", "add"}
    assert work["flops"] == 3 * x.numel()
    assert work["bytes"] == 3 * 2 * x.numel() * 4


def test_a_kernel_that_computes_the_output_does_all_the_work(kernels) -> None:
    counter, k = kernels
    x = torch.randn(8, 16)

    def forward(x):
        y = torch.empty_like(x)
        k["relu_affine"](x, y, x.numel())
        return y.view(16, 8).view(8, 16)

    prov = record(counter, forward, x)
    assert prov["outputs"] == [{"kernel": True, "unrecorded": False}]
    assert work_share.problems(reference_work(x), prov) == []
    assert work_share.shares(reference_work(x), prov)["kernel_share_flops"] == 1.0


def test_a_scale_of_one_from_a_kernel_leaves_the_work_to_torch(kernels) -> None:
    counter, k = kernels
    x = torch.randn(8, 16)

    def forward(x):
        s = torch.empty(1)
        k["unit"](x, s, x.numel())
        return torch.clamp(x, min=0.0) * 2.0 + 1.0 * s

    prov = record(counter, forward, x)
    found = work_share.problems(reference_work(x), prov)
    assert any("torch computed" in f and "aten::clamp" in f for f in found), found
    assert work_share.shares(reference_work(x), prov)["torch_share_flops"] == 1.0


def test_a_flag_from_a_kernel_does_not_make_the_output_the_kernels(kernels) -> None:
    counter, k = kernels
    x = torch.randn(8, 16)

    def forward(x):
        s = torch.zeros(1)
        k["unit"](x, s, x.numel())
        return torch.maximum(x, torch.zeros_like(x)) * 2.0 + 1.0 if float(s.item()) == 1.0 else x

    prov = record(counter, forward, x)
    assert prov["outputs"] == [{"kernel": False, "unrecorded": False}]
    assert any("not written by any custom kernel" in f for f in work_share.problems(reference_work(x), prov))


def test_torch_work_a_kernel_copies_is_still_torch_work(kernels) -> None:
    counter, k = kernels
    x = torch.randn(8, 16)

    def forward(x):
        y = torch.empty_like(x)
        k["copy"](torch.relu(x) * 2.0 + 1.0, y, x.numel())
        return y

    prov = record(counter, forward, x)
    assert prov["outputs"][0]["kernel"] is True
    assert prov["torch"]["flops"] == 3 * x.numel()


def test_values_from_numpy_are_of_unrecorded_origin(kernels) -> None:
    counter, k = kernels
    x = torch.randn(8, 16)

    def forward(x):
        y = torch.empty_like(x)
        k["copy"](torch.from_numpy(np.maximum(x.numpy(), 0) * np.float32(2) + np.float32(1)), y, x.numel())
        return y

    prov = record(counter, forward, x)
    assert prov["outputs"][0]["unrecorded"] is True
    assert any("outside every recorded" in f for f in work_share.problems(reference_work(x), prov))


def test_tensors_the_model_holds_are_not_unrecorded(kernels) -> None:
    counter, k = kernels
    x = torch.randn(8, 16)
    model = torch.nn.Module()
    model.table = torch.randn(8, 16)  # a plain attribute, not a buffer

    def forward(x):
        y = torch.empty_like(x)
        k["copy"](model.table, y, x.numel())
        return y

    mode = provenance.Provenance(counter, [x], provenance.reachable_tensors(model, object()))
    with torch.no_grad(), mode:
        out = forward(x)
    assert mode.summary(out)["outputs"] == [{"kernel": True, "unrecorded": False}]


def test_a_bias_add_after_a_kernel_product_is_glue() -> None:
    ref = {"flops": 2.0 * 64 * 64 * 64 + 64 * 64, "bytes": 1.0, "by_op": {"addmm": [1.0, 1.0]}}
    prov = {"outputs": [{"kernel": True, "unrecorded": False}], "kernel_launches": 1,
            "torch": {"flops": 64.0 * 64, "bytes": 2.0 * 64 * 64 * 4, "by_op": {"add": [64.0 * 64, 1.0]}}}
    assert work_share.problems(ref, prov) == []
    assert work_share.shares(ref, prov)["kernel_share_flops"] > 0.99


def test_the_cost_of_a_product_is_two_m_n_k() -> None:
    a, b = torch.randn(5, 7), torch.randn(7, 3)
    out = a @ b
    assert provenance.cost("mm", (a, b), [out])[0] == 2 * 5 * 3 * 7
    bias = torch.randn(3)
    assert provenance.cost("addmm", (bias, a, b), [out])[0] == 2 * 5 * 3 * 7


def test_an_affine_after_a_kernel_normalisation_is_glue() -> None:
    x = torch.randn(4, 32)
    out = torch.nn.functional.layer_norm(x, (32,))
    norm = provenance.cost("native_layer_norm", (x,), [out])[0]
    affine = 2 * provenance.cost("mul", (x, x), [out])[0]
    assert affine / norm <= work_share.TORCH_SHARE_MAX


def test_torch_values_laundered_through_python_numbers_stay_torch_work(kernels) -> None:
    counter, k = kernels
    x = torch.randn(4, 8)

    def forward(x):
        r = torch.clamp(x, min=0.0) * 2.0 + 1.0
        y = torch.empty_like(x)
        k["relu_affine"](x, y, x.numel())
        flat = y.view(-1)
        for i, v in enumerate(r.view(-1)):
            flat[i] = float(v)  # each value read into Python and written back
        k["copy"](y, y, y.numel())  # a kernel "touches" the result last
        return y

    prov = record(counter, forward, x)
    assert prov["outputs"][0]["kernel"] is True
    assert any("torch computed" in f for f in work_share.problems(reference_work(x), prov))


def test_tensors_a_module_keeps_between_calls_are_found() -> None:
    import types

    module = types.ModuleType("cand")
    module.BUFFERS = {(4, 8): torch.empty(4, 8)}
    model = torch.nn.Sequential(torch.nn.Identity(), torch.nn.Identity())
    found = provenance.reachable_tensors(model, module)
    assert any(t is module.BUFFERS[(4, 8)] for t in found)


def test_a_canary_is_compared_in_place_and_any_changed_byte_counts():
    import torch

    from sandbox.runner.measure.provenance import CANARY_COMPARE, _canary_fill, _still_canary

    for n in (1, 65_537, CANARY_COMPARE + 3, 3 * CANARY_COMPARE):
        raw = torch.empty(n, dtype=torch.uint8)
        block = _canary_fill(raw)
        assert _still_canary(raw, block)
        for at in {0, n // 2, n - 1}:
            raw[at] ^= 1
            assert not _still_canary(raw, block), (n, at)
            raw[at] ^= 1


def test_the_reference_work_without_labels_is_the_same_and_a_recurrence_stays_small() -> None:
    # the reference's work is all its records: counted without labels, it is what labels gave,
    # and a GRU unrolled into torch ops (labels growing with every step) keeps no label at all
    gru = torch.nn.GRU(8, 16, num_layers=2)
    x = torch.randn(64, 2, 8)
    works, ops = [], []
    for labels in (True, False):
        mode = provenance.Provenance(None, [x, *gru.parameters()], labels=labels)
        with torch.no_grad(), mode:
            gru(x, torch.randn(2, 2, 16))
        works.append(provenance.reference_work(mode))
        ops.append(mode.ops)
        if not labels:
            assert mode.label == {} and mode.records
    assert works[0] == works[1] and ops[0] == ops[1] and works[0]["flops"] > 0
