"""Torch's ops grouped by the work they do: the one table the judge (``no_reference_ops``),
the knowledge base (a problem's families, a lesson's ``applies_to``) and the offline engine
(its template families) read.

Each family has a weight (3: products -- a multiply-accumulate over a shared dimension --
2: row and window work, 1: elementwise), the aten ops the judge's dispatch record names,
and ``spellings``: the names a traced graph gives the same work (``nn`` module classes in
lower case, Python-level functions) that never reach the dispatcher under that name. The
judge reads ``ops`` only; the knowledge base reads both. An op in no family is elementwise
(``ELEMENTWISE`` names the ones the knowledge base recognises) or, for the judge, a family
of its own of weight 1.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    weight: int
    ops: frozenset[str]
    spellings: frozenset[str] = frozenset()


def _family(weight: int, ops: str, spellings: str = "") -> Family:
    return Family(weight, frozenset(ops.split()), frozenset(spellings.split()))


PRODUCTS = 3  # families of this weight stand in for each other (attention is two batched products)

# In rank order: the main computation of a problem first.
FAMILIES: dict[str, Family] = {
    "attention": _family(3, """scaled_dot_product_attention _scaled_dot_product_attention_math
        _scaled_dot_product_flash_attention _scaled_dot_product_efficient_attention
        _scaled_dot_product_cudnn_attention _flash_attention_forward _scaled_dot_product_flash_attention_for_cpu""",
                         "multiheadattention"),
    "matmul": _family(3, """mm bmm addmm matmul linear einsum baddbmm addbmm mv dot tensordot _addmm_activation addmv
        vdot inner outer chain_matmul _scaled_mm _int_mm""", "bilinear"),
    "conv": _family(3, """convolution _convolution conv1d conv2d conv3d conv_transpose1d conv_transpose2d
        conv_transpose3d cudnn_convolution mkldnn_convolution _slow_conv2d_forward slow_conv3d_forward thnn_conv2d
        _nnpack_spatial_convolution cudnn_convolution_transpose slow_conv_transpose2d slow_conv_transpose3d
        convolution_overrideable _conv_depthwise2d conv_depthwise3d slow_conv_dilated2d""",
                    "convtranspose1d convtranspose2d convtranspose3d"),
    # recurrent layers: a product per step (torch's CPU LSTM is oneDNN's mkldnn_rnn_layer; its GRU
    # and RNN decompose to addmm, the matmul family)
    "rnn": _family(3, """lstm gru rnn_tanh rnn_relu mkldnn_rnn_layer mkldnn_rnn lstm_cell gru_cell rnn_tanh_cell
        rnn_relu_cell _thnn_fused_lstm_cell _thnn_fused_gru_cell _cudnn_rnn miopen_rnn quantized_lstm quantized_gru
        _lstm_mps""", "rnn lstmcell grucell rnncell"),
    "softmax": _family(2, "softmax _softmax log_softmax _log_softmax special_softmax", "logsoftmax softmin"),
    "norm": _family(2, """layer_norm native_layer_norm group_norm native_group_norm batch_norm native_batch_norm
        _native_batch_norm_legit _native_batch_norm_legit_no_training _batch_norm_impl_index instance_norm rms_norm
        _fused_rms_norm cudnn_batch_norm _batch_norm_with_update _batch_norm_no_update""",
                    """layernorm groupnorm batchnorm1d batchnorm2d batchnorm3d instancenorm1d instancenorm2d
        instancenorm3d rmsnorm normalize local_response_norm localresponsenorm"""),
    "pool": _family(2, """max_pool1d max_pool2d max_pool3d max_pool2d_with_indices max_pool3d_with_indices avg_pool1d
        avg_pool2d avg_pool3d adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d _adaptive_avg_pool2d
        _adaptive_avg_pool3d adaptive_max_pool2d adaptive_max_pool3d mkldnn_max_pool2d""",
                    """maxpool1d maxpool2d maxpool3d avgpool1d avgpool2d avgpool3d adaptiveavgpool1d adaptiveavgpool2d
        adaptiveavgpool3d adaptivemaxpool2d adaptivemaxpool3d"""),
    "reduction": _family(2, """sum mean amax amin max min logsumexp var std var_mean std_mean norm linalg_vector_norm
        prod cumsum cumprod argmax argmin nansum nanmean median aminmax frobenius_norm sort topk""", "all any"),
}

ELEMENTWISE: frozenset[str] = frozenset("""
    relu relu6 gelu sigmoid tanh silu mish selu elu leaky_relu hardtanh clamp clamp_min clamp_max clip softplus
    hardsigmoid hardswish exp exp2 log log2 abs neg sqrt rsqrt reciprocal square pow sin cos erf add sub mul div
    maximum minimum where threshold sign floor ceil round fmod remainder logaddexp lerp addcmul addcdiv softsign
    tanhshrink hardshrink softshrink logsigmoid gelu_ relu_ add_ mul_ true_divide rsub eq ne lt le gt ge masked_fill
    dropout sigmoid_ expm1 log1p prelu glu celu hardtanh_ leakyrelu tanh_ copy_ to type_as float half bfloat16
    _to_copy""".split())

# The knowledge base's families: the table's, then elementwise work and "other" (no known op).
NAMES: tuple[str, ...] = (*FAMILIES, "elementwise", "other")

# The offline engine's template families (agents/offline/templates) and the op family each
# one's kernels do: a lesson about a template is filed under the work it does.
TEMPLATES: dict[str, str] = {
    "elementwise": "elementwise", "softmax": "softmax", "norm": "norm", "reduction": "reduction",
    "matmul": "matmul", "pooling": "pool", "argreduce": "reduction", "scan": "reduction", "channel_norm": "norm",
    "conv": "conv", "attention": "attention", "triangle": "matmul", "cross_entropy": "softmax",
    "concat": "elementwise", "permute": "elementwise", "recurrent": "rnn", "pad": "elementwise",
}


def by_op(spellings: bool = False) -> dict[str, str]:
    """op name -> family; with ``spellings``, the traced graph's names too."""
    return {op: name for name, fam in FAMILIES.items()
            for op in (fam.ops | fam.spellings if spellings else fam.ops)}
