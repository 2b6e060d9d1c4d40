"""Which torch ops count as "the main computation" of a reference.

Ops are grouped into families (a candidate calling ``einsum`` where the
reference calls ``mm`` still hands the matmul to torch). The reference's main
families are those of its highest weight. A candidate fails if it runs any op
of a main family of weight >= 2, or any op of a family heavier than the
reference's heaviest (a row mean done by ``torch.mv``, a reduction inside an
elementwise problem); for purely elementwise references (weight 1) it also
fails if it runs every op the reference runs. Products (weight 3: matmul,
convolution, attention) stand in for each other -- attention is two batched
products, a convolution an unfolded one -- so where the reference's heaviest
work is a product, a candidate running a product of any of those families
hands it to torch (attention written out as matmul + softmax done by torch's
``scaled_dot_product_attention``; a convolution done by ``mm`` on an unfold).
Elementwise work spelled with
other ops (``clamp`` for ``relu``) is left to the ``kernel_does_work`` check,
which re-runs forward with the kernels skipped.
"""

from __future__ import annotations

FAMILIES: dict[str, tuple[int, set[str]]] = {
    "matmul": (3, {"mm", "bmm", "addmm", "matmul", "linear", "einsum", "baddbmm", "addbmm", "mv", "dot",
                   "tensordot", "_addmm_activation", "addmv", "vdot", "inner", "outer", "chain_matmul",
                   "_scaled_mm", "_int_mm"}),
    "conv": (3, {"convolution", "_convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                 "conv_transpose2d", "conv_transpose3d", "cudnn_convolution", "mkldnn_convolution",
                 "_slow_conv2d_forward", "slow_conv3d_forward", "thnn_conv2d", "_nnpack_spatial_convolution",
                 "cudnn_convolution_transpose", "slow_conv_transpose2d", "slow_conv_transpose3d",
                 "convolution_overrideable", "_conv_depthwise2d", "conv_depthwise3d", "slow_conv_dilated2d"}),
    "attention": (3, {"scaled_dot_product_attention", "_scaled_dot_product_attention_math",
                      "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                      "_scaled_dot_product_cudnn_attention", "_flash_attention_forward",
                      "_scaled_dot_product_flash_attention_for_cpu"}),
    # recurrent layers: a product per step (torch's CPU LSTM is oneDNN's mkldnn_rnn_layer; its GRU
    # and RNN decompose to addmm, the matmul family)
    "rnn": (3, {"lstm", "gru", "rnn_tanh", "rnn_relu", "mkldnn_rnn_layer", "mkldnn_rnn", "lstm_cell", "gru_cell",
                "rnn_tanh_cell", "rnn_relu_cell", "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "_cudnn_rnn",
                "miopen_rnn", "quantized_lstm", "quantized_gru", "_lstm_mps"}),
    "softmax": (2, {"softmax", "_softmax", "log_softmax", "_log_softmax", "special_softmax"}),
    "norm": (2, {"layer_norm", "native_layer_norm", "group_norm", "native_group_norm", "batch_norm",
                 "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
                 "_batch_norm_impl_index", "instance_norm", "rms_norm", "_fused_rms_norm", "cudnn_batch_norm",
                 "_batch_norm_with_update", "_batch_norm_no_update"}),
    "reduction": (2, {"sum", "mean", "amax", "amin", "max", "min", "logsumexp", "var", "std", "var_mean",
                      "std_mean", "norm", "linalg_vector_norm", "prod", "cumsum", "cumprod", "argmax",
                      "argmin", "nansum", "nanmean", "median", "aminmax", "frobenius_norm", "sort", "topk"}),
    "pool": (2, {"max_pool1d", "max_pool2d", "max_pool3d", "max_pool2d_with_indices",
                 "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
                 "adaptive_avg_pool2d", "adaptive_avg_pool3d", "_adaptive_avg_pool2d", "_adaptive_avg_pool3d",
                 "adaptive_max_pool2d", "adaptive_max_pool3d", "mkldnn_max_pool2d"}),
}
# Families of this weight do the same work (multiply-accumulate over a shared dimension).
PRODUCTS = 3
_BY_OP = {op: (name, weight) for name, (weight, ops) in FAMILIES.items() for op in ops}


def family(op: str) -> tuple[str, int]:
    """(family, weight); an op of no listed family is its own family of weight 1."""
    return _BY_OP.get(op, (op, 1))


def main_families(reference_ops: set[str]) -> tuple[int, set[str]]:
    if not reference_ops:
        return 0, set()
    tagged = [family(op) for op in reference_ops]
    top = max(w for _, w in tagged)
    return top, {name for name, w in tagged if w == top}


def handed_off(reference_ops: set[str], candidate_ops: set[str]) -> list[str]:
    """The candidate ops that do the reference's main computation (empty if none)."""
    weight, mains = main_families(reference_ops)
    heavier = {op for op in candidate_ops
               if family(op)[1] >= 2 and (family(op)[1] > weight or family(op)[1] >= weight >= PRODUCTS)}
    if weight >= 2:
        return sorted(heavier | {op for op in candidate_ops if family(op)[0] in mains})
    if reference_ops and reference_ops <= candidate_ops:
        return sorted(heavier | reference_ops)
    return sorted(heavier)
