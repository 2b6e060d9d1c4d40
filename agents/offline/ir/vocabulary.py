"""The IR's vocabulary: canonical op names and the spellings that map to them."""

from __future__ import annotations

from typing import Any

REQUIRED = object()

# canonical unary ops (tensor in, same-shape tensor out)
UNARY = {"relu", "relu6", "sigmoid", "tanh", "silu", "mish", "hardsigmoid", "hardswish", "selu", "exp", "log",
         "abs", "neg", "sqrt", "rsqrt", "reciprocal", "square", "sin", "cos", "erf", "identity", "gelu"}
# unary ops with scalar parameters: name -> [(parameter, default)]
PARAMETRIC: dict[str, list[tuple[str, Any]]] = {
    "leaky_relu": [("negative_slope", 0.01)],
    "elu": [("alpha", 1.0)],
    "hardtanh": [("min_val", -1.0), ("max_val", 1.0)],
    "clamp": [("min", None), ("max", None)],
    "softplus": [("beta", 1.0), ("threshold", 20.0)],
    "pow": [("exponent", REQUIRED)],
}
BINARY = {"add", "sub", "mul", "div", "maximum", "minimum"}
ELEMENTWISE = UNARY | set(PARAMETRIC) | BINARY
REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "logsumexp"}
ROW_OPS = {"softmax", "log_softmax", "layer_norm", "rms_norm"}
MATMULS = {"matmul", "mm", "bmm", "mv", "linear", "addmm"}
VIEWS = {"t", "transpose", "permute", "T", "mT"}

ALIASES = {
    "truediv": "div", "true_divide": "div", "divide": "div", "multiply": "mul", "subtract": "sub",
    "negative": "neg", "clip": "clamp", "absolute": "abs", "special_expit": "sigmoid", "expit": "sigmoid",
    "contiguous": "identity", "clone": "identity", "detach": "identity",
    "iadd": "add", "imul": "mul", "isub": "sub", "itruediv": "div",
    "concat": "cat", "concatenate": "cat",
}
# nn.Module classes -> (canonical op, attributes read from the module, with defaults when the
# analysis does not report them)
