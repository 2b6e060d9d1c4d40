"""Main-op attribution and the judge's own tensor comparisons."""

from __future__ import annotations

import torch

from sandbox.verdict import compare, ops


def test_matmul_family_is_main_even_when_spelled_differently():
    assert ops.handed_off({"mm", "relu", "add"}, {"einsum"}) == ["einsum"]
    assert ops.handed_off({"mm", "relu"}, {"relu"}) == []


def test_elementwise_reference_fails_only_when_everything_is_torch():
    assert ops.handed_off({"relu", "mul"}, {"mul"}) == []
    assert ops.handed_off({"relu", "mul"}, {"relu", "mul", "add"}) == ["mul", "relu"]


def test_softmax_reference_with_a_torch_sum_in_the_candidate_is_fine():
    assert ops.handed_off({"_softmax"}, {"sum"}) == []
    assert ops.handed_off({"_softmax"}, {"softmax"}) == ["softmax"]


def test_an_op_of_a_heavier_family_than_the_reference_is_handing_off():
    # A row mean done as a matrix-vector product; a reduction inside an elementwise problem.
    assert ops.handed_off({"mean"}, {"mv"}) == ["mv"]
    assert ops.handed_off({"relu", "mul"}, {"sum", "add"}) == ["sum"]
    assert ops.handed_off({"relu", "mul", "add"}, {"clamp", "mul", "add"}) == []  # left to kernel_does_work
    assert ops.handed_off({"mm", "relu"}, {"_softmax"}) == []  # lighter than the reference's heaviest


def test_a_recurrent_layer_handed_to_torch_is_handing_off():
    # An LSTM with a linear head (KernelBench level3/35-38): torch's CPU LSTM is oneDNN's
    # mkldnn_rnn_layer; a candidate writing only the head natively hands the layer to torch.
    assert ops.handed_off({"mkldnn_rnn_layer", "addmm"}, {"mkldnn_rnn_layer", "clone"}) == ["mkldnn_rnn_layer"]
    assert ops.handed_off({"mkldnn_rnn_layer"}, {"lstm"}) == ["lstm"]
    # a GRU's reference decomposes to addmm; the candidate's torch GRU is a product all the same
    assert ops.handed_off({"addmm", "sigmoid_", "tanh_"}, {"gru", "empty"}) == ["gru"]
    assert ops.handed_off({"mkldnn_rnn_layer"}, {"empty", "select"}) == []


def test_products_stand_in_for_each_other():
    # Attention written out (bmm + softmax) done by torch's fused attention, and the reverse;
    # a convolution done as unfold + mm.
    attention = "_scaled_dot_product_flash_attention_for_cpu"
    assert ops.handed_off({"bmm", "_softmax", "mm"}, {attention, "view"}) == [attention]
    assert ops.handed_off({attention, "mm"}, {"bmm"}) == ["bmm"]
    assert ops.handed_off({"convolution", "relu"}, {"im2col", "mm"}) == ["mm"]
    assert ops.handed_off({"mm"}, {"convolution"}) == ["convolution"]
    # A lighter family is still glue under a product.
    assert ops.handed_off({"mm", "_softmax"}, {"sum"}) == []


def test_value_problems_respect_fp32_tolerance():
    ref = [torch.ones(10)]
    assert compare.value_problems(ref, [torch.ones(10) + 5e-5]) == []
    problems = compare.value_problems(ref, [torch.ones(10) + 5e-3])
    assert problems and "10 of 10" in problems[0]


def test_format_problems_catch_subclass_shape_and_dtype():
    r = [torch.zeros(2, 3)]
    assert compare.format_problems("tensor", r, "tensor", [torch.zeros(2, 3)], ["torch.Tensor"]) == []
    assert "not a plain" in compare.format_problems("tensor", r, "tensor", [None], ["evil.Fake"])[0]
    assert "shape" in compare.format_problems("tensor", r, "tensor", [torch.zeros(3, 2)], ["torch.Tensor"])[0]
    assert "dtype" in compare.format_problems("tensor", r, "tensor", [torch.zeros(2, 3, dtype=torch.float64)],
                                              ["torch.Tensor"])[0]
    assert "tuple[2]" in compare.format_problems("tensor", r, "tuple[2]", [], [])[0]


def test_nonfinite_only_where_the_reference_is_finite():
    r = [torch.tensor([1.0, float("nan")])]
    assert compare.nonfinite_problems(r, [torch.tensor([1.0, float("nan")])]) == []
    assert compare.nonfinite_problems(r, [torch.tensor([float("inf"), float("nan")])])


def test_changed_inputs_sees_in_place_writes_and_tolerates_nan():
    x = torch.tensor([1.0, float("nan")])
    assert compare.changed_inputs([x], [x.clone()]) == []
    assert compare.changed_inputs([x, 3], [torch.tensor([2.0, float("nan")]), 3]) == [0]


def test_chunked_comparison_decides_as_float64_isclose_does() -> None:
    """compare.all_close (float32 chunks with a margin, float64 for anything near the bound,
    NaN or inf) against torch.isclose in float64 on whole tensors: the same verdict on random
    outputs within 0-1.2x of the tolerance, NaN, inf and sizes across chunk borders."""
    from sandbox.verdict.compare import CHUNK, all_close

    g = torch.Generator().manual_seed(0)
    for trial in range(200):
        n = int(torch.randint(1, 3 * CHUNK if trial < 3 else 5000, (1,), generator=g))
        r = torch.randn(n, generator=g) * float(10 ** torch.randint(-3, 4, (1,), generator=g))
        atol, rtol = 1e-4, 1e-4
        o = r + (torch.rand(n, generator=g) - 0.5) * 2 * (atol + rtol * r.abs()) * float(torch.rand(1, generator=g) * 1.2)
        k = int(torch.randint(0, n, (1,), generator=g))
        if trial % 7 == 0:
            o[k] = float("nan")
        elif trial % 11 == 0:
            o[k] = r[k] = float("inf")
        elif trial % 13 == 0:
            o[k] = r[k] = float("nan")
        want = bool(torch.isclose(o.double(), r.double(), atol=atol, rtol=rtol, equal_nan=True).all())
        assert all_close(o, r, atol, rtol) == want, trial


def test_thread_parity_is_judged_over_passes_long_enough_to_measure() -> None:
    """The CPU time per wall second of the timed pass: more than the granted threads (plus
    slack) fails, unless the pass was too short for the process clock to say (CPUS_USED_MIN_MS)."""
    from sandbox.verdict.checks import CPUS_USED_MIN_MS, thread_parity_problem

    assert thread_parity_problem({"cpus_used": 3.4, "cpus_used_over_ms": 500.0}, 2)
    assert thread_parity_problem({"cpus_used": 2.1, "cpus_used_over_ms": 500.0}, 2) is None
    assert thread_parity_problem({"cpus_used": 3.4, "cpus_used_over_ms": CPUS_USED_MIN_MS / 8}, 2) is None
    assert thread_parity_problem({"cpus_used": 3.4}, 2)  # a frame without the duration is judged


def test_finite_check_in_one_sum_falls_back_where_the_sum_overflows():
    import torch

    from sandbox.verdict.compare import _all_finite, nonfinite_problems

    big = torch.full((3_000_000,), 3e38)  # every value finite, their sum is not
    assert _all_finite(big) and _all_finite(torch.empty(0))
    for bad in (float("nan"), float("inf"), float("-inf")):
        x = big.clone()
        x[2_500_001] = bad
        assert not _all_finite(x)
        y = torch.zeros(3_000_000)
        y[7] = bad
        assert not _all_finite(y)
        assert nonfinite_problems([torch.zeros(3_000_000)], [y]) and not nonfinite_problems([y], [y])


def test_nonfinite_values_are_counted_chunk_by_chunk_and_first_stops_at_the_first():
    import torch

    from sandbox.verdict.compare import CHUNK, nonfinite_problems

    ref = torch.zeros(3 * CHUNK + 5)
    ref[-1] = float("nan")  # the reference's own NaN is no problem of the candidate's
    out = ref.clone()
    out[3] = out[CHUNK + 1] = out[3 * CHUNK + 2] = float("inf")
    out[-1] = float("nan")
    assert nonfinite_problems([ref], [out]) == ["output 0 has 3 NaN/Inf value(s) where the reference has none"]
    assert nonfinite_problems([ref], [out], first=True) == [
        "output 0 has at least 1 NaN/Inf value(s) where the reference has none"]
    assert nonfinite_problems([ref], [ref.clone()]) == [] and nonfinite_problems([ref], [ref], first=True) == []


def test_atol_scales_with_a_small_output_and_never_with_a_large_one() -> None:
    from sandbox.verdict import compare, tolerances

    torch.manual_seed(0)
    ref = torch.softmax(torch.randn(4, 16384), dim=1)  # every value near 6e-5, under the fp32 atol
    atol, rtol = tolerances.for_output(ref)
    assert atol < 1e-4 * 2e-4 and rtol == 1e-4
    # off by 1e-3 relative (10 mantissa bits): within 1e-4 absolute, not within the scaled atol
    rough = ref * (1 + 1e-3 * torch.sign(torch.randn_like(ref)))
    assert compare.value_problems([ref], [rough])
    assert not compare.value_problems([ref], [ref * (1 + 1e-6)])  # float32 rounding still passes
    assert compare.value_problems([ref], [torch.zeros_like(ref)])  # zeros were "close" before
    big = torch.randn(64, 64) * 10
    assert tolerances.for_output(big) == (1e-4, 1e-4)
    assert tolerances.for_output(ref, (1e-4, 1e-4)) == (1e-4, 1e-4)  # an override is taken as given
