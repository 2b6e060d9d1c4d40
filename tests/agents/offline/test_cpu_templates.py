"""The offline engine's C templates (backend cpu), directly: every family's every parameter
set renders, compiles with the real gcc through kforge_native, and matches torch within fp32
tolerance on odd shapes. No judge here (tests/agents/offline/test_cpu_judge.py has it)."""

from __future__ import annotations

import textwrap

import pytest

from agents.offline import OfflineEngine
from agents.offline.templates import families_for
from agents.offline.templates.cpu.common import NotRenderable, c_float

from .cpu_harness import analyse, check, cpu_proposals

HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"


def ref(body: str, inputs: str, init: str = "[]", sizes: str = "") -> str:
    return (HEAD + textwrap.dedent(body).strip() + "\n\n" + textwrap.dedent(sizes).strip() + "\n\n"
            f"def get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return {init}\n")


def fn(expr: str, args: str = "x") -> str:
    return f"""
        class Model(nn.Module):
            def forward(self, {args}):
                return {expr}
        """


ODD = "[torch.randn(3, 37, 19)]"
CASES: dict[str, tuple[str, str]] = {
    # elementwise: flat walk, then the row walk with broadcast operands
    "gelu_erf_sigmoid": ("elementwise", ref(fn("F.gelu(x) * torch.sigmoid(x) + 0.5 * x"), ODD)),
    # a reduction to one value, then every element divided by it (KernelBench's Frobenius norm):
    # the square read inside the sum (a fused stage), the value read once by the last stage
    "frobenius_norm": ("pipeline", ref(fn("x / torch.norm(x, p='fro')"), "[torch.randn(5, 7, 33, 31)]")),
    # elu / selu's positive fast path: all-positive runs (no exp), mixed runs, a second input, a tail
    "elu_selu_positive_runs": ("elementwise", ref(fn("F.elu(x, 0.7) + F.selu(x) * y", "x, y"),
                                                  "[torch.cat([torch.rand(3000), torch.randn(1003)]), "
                                                  "torch.randn(4003)]")),
    # softplus through the vectorisable kf_log: both sides of the threshold, far tails, a beta
    "softplus_beta_threshold": ("elementwise", ref(fn("F.softplus(x, beta=2.0, threshold=5.0) + F.softplus(x)"),
                                                   "[torch.randn(4099) * 12]")),
    "gelu_tanh_softplus_mish": ("elementwise", ref(fn("F.gelu(x, approximate='tanh') - F.softplus(x * 8.0) "
                                                      "+ F.mish(x) * F.selu(x)"), "[torch.randn(1001) * 4]")),
    "big_values_exp_tanh": ("elementwise", ref(fn("torch.tanh(x * 30.0) + torch.exp(x).clamp(max=3e5)"),
                                               "[torch.randn(7, 129) * 6]")),
    "column_bias_channel_scale": ("elementwise", ref("""
        class Model(nn.Module):
            def __init__(self, channels, width):
                super().__init__()
                self.bias = nn.Parameter(torch.randn(width))
                self.scale = nn.Parameter(torch.randn(channels, 1))

            def forward(self, x, y):
                return F.leaky_relu(x + self.bias, 0.2) * self.scale - F.hardtanh(y, -0.3, 0.4) / F.elu(y).abs().add(1)
        """, "[torch.randn(2, channels, width), torch.randn(2, channels, width)]", "[channels, width]",
        "channels = 5\nwidth = 33")),
    # softmax / log_softmax, last dim and another dim
    "softmax_last": ("softmax", ref(fn("torch.softmax(x, dim=-1)"),
                                    "[torch.randn(13, 1029) * 10]")),
    "log_softmax_dim1": ("softmax", ref(fn("F.log_softmax(x, dim=1)"), ODD)),
    # over the channels of a 5-d tensor, strided (no transposed copy), with an epilogue in the last pass;
    # inner sizes below, at and past the inner block, a per-channel and a full-size operand (the same
    # chain unfused, as pipeline stages, is proposed beside it: Triton's softmax template fuses nothing)
    "softmax_channels_sigmoid": ("softmax|pipeline", ref(fn("torch.sigmoid(torch.softmax(x, dim=1))"),
                                                "[torch.randn(2, 13, 3, 7, 29) * 4]")),
    "log_softmax_mid_dim_channel_scale": ("softmax|pipeline", ref("""
        class Model(nn.Module):
            def __init__(self, channels):
                super().__init__()
                self.scale = nn.Parameter(torch.randn(channels, 1, 1))

            def forward(self, x, y):
                return torch.tanh(F.log_softmax(x, dim=2) * self.scale + y)
        """, "[torch.randn(2, channels, 11, 300), torch.randn(2, channels, 11, 300)]", "[channels]",
        "channels = 6")),
    "softmax_last_relu": ("softmax|pipeline", ref(fn("torch.relu(torch.softmax(x, dim=-1) - 0.01) * 3.0"),
                                         "[torch.randn(13, 1029) * 10]")),
    # a permute made contiguous: the last dim kept (whole runs), and moved (tiles past TILE both ways)
    "permute_heads_transpose": ("permute", ref(fn("x.transpose(1, 2).contiguous()"), "[torch.randn(2, 5, 3, 7)]")),
    "permute_last_dim_moves": ("permute", ref(fn("x.permute(0, 3, 1, 2)"), "[torch.randn(2, 37, 9, 70)]")),
    # norms
    "layer_norm_two_dims": ("norm", ref("""
        class Model(nn.Module):
            def __init__(self, a, b):
                super().__init__()
                self.ln = nn.LayerNorm([a, b], eps=1e-6)

            def forward(self, x):
                return self.ln(x)
        """, "[torch.randn(3, a, b) * 3 + 7]", "[a, b]", "a = 7\nb = 23")),
    "rms_norm_weight": ("norm", ref("""
        class Model(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.norm = nn.RMSNorm(d, eps=1e-5)

            def forward(self, x):
                return self.norm(x)
        """, "[torch.randn(5, 11, d)]", "[d]", "d = 257")),
    # reductions: rows, strided columns, moved dims, logsumexp, keepdim
    # a 1x1 stride-1 convolution: the BLAS algorithm multiplies the input in place (no patches)
    "conv2d_1x1_bias_relu": ("conv", ref("""
        class Model(nn.Module):
            def __init__(self, cin, cout):
                super().__init__()
                self.conv = nn.Conv2d(cin, cout, 1)

            def forward(self, x):
                return torch.relu(self.conv(x)) * 0.5
        """, "[torch.randn(2, cin, 7, 9)]", "[cin, cout]", "cin = 6\ncout = 10")),
    "sum_rows": ("reduction", ref(fn("torch.sum(x, dim=-1)"), "[torch.randn(41, 1531) + 1]")),
    "amax_middle": ("reduction", ref(fn("torch.amax(x, dim=1)"), ODD)),
    "mean_outer_keepdim": ("reduction", ref(fn("x.mean(dim=(0, 1), keepdim=True)"), ODD)),
    # a strided column walk longer than a flush block (64 rows) with a 4-row tail, and strips past TILE
    "sum_middle_blocks": ("reduction", ref(fn("torch.sum(x, dim=1)"), "[torch.randn(2, 203, 300) + 1]")),
    # a few long rows (to a scalar): each row shared by all threads
    "sum_to_scalar": ("reduction", ref(fn("torch.sum(x)"), "[torch.randn(300, 301) + 1]")),
    "logsumexp_two_long_rows": ("reduction", ref(fn("torch.logsumexp(x, dim=1)"), "[torch.randn(2, 40001) * 20]")),
    "logsumexp_middle": ("reduction", ref(fn("torch.logsumexp(x, dim=1)"), "[torch.randn(3, 37, 19) * 20]")),
    "min_dims_0_2": ("reduction", ref(fn("torch.amin(x, dim=(0, 2))"), ODD)),
    # matmul with epilogues, transposes, batches, a vector
    "matmul_odd": ("matmul", ref(fn("torch.matmul(a, b)", "a, b"), "[torch.randn(61, 91), torch.randn(91, 53)]")),
    "linear_gelu_scale": ("matmul", ref("""
        class Model(nn.Module):
            def __init__(self, i, o):
                super().__init__()
                self.fc = nn.Linear(i, o)

            def forward(self, x):
                return F.gelu(self.fc(x)) * 0.5
        """, "[torch.randn(3, 7, i)]", "[i, o]", "i = 300\no = 37")),
    "bmm_transposed_a_row_residual": ("matmul", ref(fn("torch.bmm(a.transpose(1, 2), b) + r", "a, b, r"),
                                                    "[torch.randn(3, 20, 33), torch.randn(3, 20, 17), "
                                                    "torch.randn(3, 33, 1)]")),
    "matmul_transposed_b_long_k": ("matmul", ref(fn("torch.relu(a @ b.t())", "a, b"),
                                                 "[torch.randn(13, 1000), torch.randn(29, 1000)]")),
    "matvec": ("matmul", ref(fn("torch.mv(a, v) * 2.0", "a, v"), "[torch.randn(45, 301), torch.randn(301)]")),
    # one output column (KernelBench's matrix-vector problem): the BLAS rank's streaming row dot product
    "matmul_one_column": ("matmul", ref(fn("torch.matmul(a, b) + 1.0", "a, b"),
                                        "[torch.randn(37, 2001), torch.randn(2001, 1)]")),
    "matmul_one_column_transposed": ("matmul", ref(fn("torch.relu(a @ v.t())", "a, v"),
                                                   "[torch.randn(19, 501), torch.randn(1, 501)]")),
    # a one-value tensor in the epilogue: read once before the loops (hoisted)
    "matmul_scalar_parameter": ("matmul", ref("""
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.s = nn.Parameter(torch.tensor([0.75]))

            def forward(self, a, b):
                return torch.relu(a @ b) * self.s
        """, "[torch.randn(33, 65), torch.randn(65, 29)]")),
    # a batch of small products (KernelBench's bmm): the BLAS rank runs one product per thread
    "bmm_many_small": ("matmul", ref(fn("torch.bmm(a, b) - 1.0", "a, b"),
                                     "[torch.randn(9, 23, 41), torch.randn(9, 41, 17)]")),
    # a small output over a long K (KernelBench's large-K product): the BLAS rank splits K
    "matmul_long_k_split": ("matmul", ref(fn("torch.matmul(a, b) * 0.5", "a, b"),
                                          "[torch.randn(9, 3001), torch.randn(3001, 7)]")),
    "matmul_long_k_split_transposed": ("matmul", ref(fn("a.t() @ b.t()", "a, b"),
                                                     "[torch.randn(2999, 11), torch.randn(5, 2999)]")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_parameter_set_compiles_and_matches_torch(case: str) -> None:
    family, source = CASES[case]
    proposals = cpu_proposals(source)
    assert proposals, f"{case}: no C proposal"
    assert {p.family for p in proposals} == set(family.split("|"))
    for i, p in enumerate(proposals):
        assert "from kforge_native import load_c" in p.source and "SRC = r'''" in p.source
        check(source, p.source, f"{case}_{i}")


def test_each_family_offers_its_whole_parameter_space() -> None:
    engine = OfflineEngine(backend="cpu")
    assert engine.families() == ["elementwise", "softmax", "norm", "reduction", "matmul", "pooling", "argreduce",
                                 "scan", "channel_norm", "conv", "attention",
                                 "triangle", "cross_entropy", "concat", "permute", "recurrent", "pad", "pipeline"]
    for family in engine.families():
        space = engine.autotune_space(family)
        assert len(space) >= 4 and space == families_for("cpu")[family].PARAM_SPACE
    source = CASES["gelu_erf_sigmoid"][1]
    assert [p.params for p in cpu_proposals(source)] == engine.autotune_space("elementwise")


def test_elu_takes_its_positive_form_on_an_all_positive_run() -> None:
    source = cpu_proposals(CASES["elu_selu_positive_runs"][1])[0].source
    assert "rest |= !(v_x_p[i] > 0.0f)" in source and "kf_exp" in source
    fast = source.split("if (!rest) {")[1].split("} else {")[0]
    assert "kf_exp" not in fast, "the positive form of elu / selu needs no exp"


def test_matmul_uses_packing_and_a_register_tiled_micro_kernel() -> None:
    source = cpu_proposals(CASES["matmul_odd"][1])[0].source
    for piece in ("pack_b(", "kf_micro(", "_mm256_fmadd_ps", "_mm512_fmadd_ps", "#pragma omp parallel for collapse(3)"):
        assert piece in source


def test_non_float32_is_left_to_other_templates() -> None:
    source = ref(fn("torch.relu(x)"), "[torch.randn(4, 5, dtype=torch.float64)]")
    assert cpu_proposals(source) == []
    with pytest.raises(NotRenderable):
        engine = OfflineEngine(backend="cpu")
        match = engine.report(analyse(source)).matches[0]
        engine.templates["elementwise"].render(match, engine.autotune_space("elementwise")[0])


def test_c_float_literals() -> None:
    assert c_float(0.5) == "0.5f" and c_float(2) == "2.0f" and c_float(1e-5) == "1e-05f"
    assert c_float(float("inf")) == "INFINITY" and c_float(float("-inf")) == "(-INFINITY)"


def test_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown backend"):
        OfflineEngine(backend="opencl")


FUSED = {
    # prologue and epilogue: one read of x, no full-size temporary
    "row_norm": ref(fn("torch.sqrt((x * x).sum(dim=1))"), "[torch.randn(37, 1531)]"),
    # a constructor scalar in the prologue, literals in the epilogue, the few-long-rows path
    "scaled_abs_mean_few_rows": ref("""
        class Model(nn.Module):
            def __init__(self, scale):
                super().__init__()
                self.scale = scale

            def forward(self, x):
                return (x.abs() * self.scale).mean(dim=-1) * 0.5 + 1.0
        """, "[torch.randn(2, 40001)]", "[scale]", "scale = 1.75"),
    # max of a pointwise chain over the last two dims, kept as size 1
    "amax_relu_last_two": ref(fn("torch.relu(x - 0.25).amax(dim=(1, 2), keepdim=True)"), ODD),
}


@pytest.mark.parametrize("case", sorted(FUSED))
def test_pointwise_ops_around_a_row_reduction_are_fused(case: str) -> None:
    source = FUSED[case]
    proposals = cpu_proposals(source)
    assert proposals[0].family == "reduction", [p.family for p in proposals]
    assert "const float xv = xr[j];" in proposals[0].source or "const float rv" in proposals[0].source
    fused = [p for p in proposals if p.family == "reduction"]
    assert len(fused) >= 2  # its parameter sets (max and min take no accumulator type: fewer distinct)
    # the unfused chain is offered after them (the backends whose reduction template does not fuse use it)
    assert any(p.family == "pipeline" for p in proposals)
    for i, p in enumerate(proposals):
        check(source, p.source, f"{case}_{i}")


def test_triton_writes_a_fused_reduction_as_stages() -> None:
    source = FUSED["row_norm"]
    engine = OfflineEngine(backend="triton")
    plan = engine.plan(analyse(source), 4)
    assert plan.proposals and {p.family for p in plan.proposals} == {"pipeline"}
    assert any("the triton template does not cover it" in s for s in plan.skipped)


# A norm written out over a middle dim (KernelBench level1/36: the mean of x ** 2 over dim 1
# of a 4-D x). Evaluated as rows, that dim had looked like the last: every candidate was a
# last-dim norm and failed correctness at every size.
MIDDLE_NORM = {
    "rms_dim1": ref("""
        class Model(nn.Module):
            def __init__(self, num_features, eps=1e-5):
                super().__init__()
                self.eps = eps

            def forward(self, x):
                return x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)
        """, "[torch.rand(3, 19, 37, 29)]", "[19]"),
    "layer_dim2": ref(fn("(x - x.mean(2, keepdim=True)) / torch.sqrt(((x - x.mean(2, keepdim=True)) ** 2)"
                         ".mean(2, keepdim=True) + 1e-5)"), "[torch.randn(2, 3, 23, 301)]"),
}


@pytest.mark.parametrize("case", sorted(MIDDLE_NORM))
def test_a_norm_over_a_middle_dim_runs_over_that_dim(case: str) -> None:
    source = MIDDLE_NORM[case]
    proposals = cpu_proposals(source)
    assert proposals and proposals[0].family == "norm", [p.family for p in proposals]
    assert "_strided(" in proposals[0].source
    for i, p in enumerate(proposals):
        check(source, p.source, f"{case}_{i}")


def test_a_last_dim_norm_is_not_matched_where_the_reduction_runs_over_another_dim() -> None:
    """The same formula with the mean over the last dim stays a row norm; a sum over a middle
    dim beside a mean over the last is no norm at all."""
    last = ref(fn("x / torch.sqrt(torch.mean(x ** 2, dim=-1, keepdim=True) + 1e-5)"), "[torch.rand(3, 5, 37)]")
    assert "_rows(" in cpu_proposals(last)[0].source
    mixed = ref(fn("x / torch.sqrt(torch.mean(x ** 2, dim=-1, keepdim=True) + x.sum(1, keepdim=True))"),
                "[torch.rand(3, 5, 37)]")
    assert all(p.family != "norm" for p in cpu_proposals(mixed))
