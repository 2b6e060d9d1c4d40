"""Layer norm and RMS norm over the trailing dims, one Triton program per row.

The normalised dims are flattened into one row. Rows that fit in one block are
read once; longer rows are read in blocks: a pass for the statistics (for layer
norm, the mean first and then the centred sum of squares, which stays accurate
when the mean is large) and a pass that writes.
"""

from __future__ import annotations

from typing import Any

from ...common import dtype_of, model_class, module_source
from ...spaces import param_space
from .row import ROW_START

PARAM_SPACE: list[dict[str, Any]] = param_space("triton", "norm")

KERNEL = '''@triton.jit
def _affine(y, w_ptr, b_ptr, offs, mask, HAS_WEIGHT: tl.constexpr, HAS_BIAS: tl.constexpr):
    """y * weight[offs] + bias[offs], each part only if the reference has it."""
    if HAS_WEIGHT:
        y = y * tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    if HAS_BIAS:
        y = y + tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    return y


@triton.jit
def {name}_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps, HAS_WEIGHT: tl.constexpr, HAS_BIAS: tl.constexpr,
        BLOCK: tl.constexpr, ONE_BLOCK: tl.constexpr):
    """Program r normalises row r of a contiguous (rows, n_cols) matrix:
    {formula}

    x_ptr, out_ptr: input and output rows, contiguous
    w_ptr, b_ptr: weight and bias over the n_cols normalised values (unused when HAS_WEIGHT / HAS_BIAS is off)
    n_cols: row length; eps: added to the {stat} before the square root
    BLOCK: columns per step, a power of two; ONE_BLOCK: the whole row fits in one BLOCK
    """
''' + ROW_START + '''\
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
{one_block_stats}
        y = _affine({centre}x{centre_end} * inv, w_ptr, b_ptr, cols, mask, HAS_WEIGHT, HAS_BIAS)
        tl.store(out_row + cols, y, mask=mask)
    else:
{looped_stats}
        for start in range(0, n_cols, BLOCK):
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
            y = _affine({centre}x{centre_end} * inv, w_ptr, b_ptr, start + cols, mask, HAS_WEIGHT, HAS_BIAS)
            tl.store(out_row + start + cols, y, mask=mask)
'''

_LAYER_ONE = '''        mean = tl.sum(x, axis=0) / n_cols
        diff = tl.where(mask, x - mean, 0.0)
        inv = 1.0 / tl.sqrt(tl.sum(diff * diff, axis=0) / n_cols + eps)'''
_LAYER_LOOP = '''        acc = tl.zeros((BLOCK,), tl.float32)
        for start in range(0, n_cols, BLOCK):
            acc += tl.load(x_row + start + cols, mask=start + cols < n_cols, other=0.0).to(tl.float32)
        mean = tl.sum(acc, axis=0) / n_cols
        acc = tl.zeros((BLOCK,), tl.float32)
        for start in range(0, n_cols, BLOCK):
            mask = start + cols < n_cols
            v = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
            diff = tl.where(mask, v - mean, 0.0)
            acc += diff * diff
        inv = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)'''
_RMS_ONE = '''        inv = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)'''
_RMS_LOOP = '''        acc = tl.zeros((BLOCK,), tl.float32)
        for start in range(0, n_cols, BLOCK):
            v = tl.load(x_row + start + cols, mask=start + cols < n_cols, other=0.0).to(tl.float32)
            acc += v * v
        inv = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    rms, ndims = spec["rms"], spec["ndims"]
    name = "rms_norm" if rms else "layer_norm"
    max_block, warps = params["MAX_BLOCK"], params["num_warps"]
    weight, bias = spec["weight"], spec["bias"]
    formula = ("x / sqrt(mean(x^2) + eps)" if rms else "(x - mean(x)) / sqrt(var(x) + eps)") + \
        (" * weight" if weight else "") + (" + bias" if bias else "")
    kernel = KERNEL.format(name=name, formula=formula, stat="mean square" if rms else "variance",
                           one_block_stats=_RMS_ONE if rms else _LAYER_ONE,
                           looped_stats=_RMS_LOOP if rms else _LAYER_LOOP,
                           centre="" if rms else "(", centre_end="" if rms else " - mean)")
    bound = ctx.scalar(spec["eps"])
    eps_arg, eps_value = (bound[0], bound[1]) if bound else ("eps", ctx.literal(spec["eps"]))
    host_params = ["x: torch.Tensor", *(["weight: torch.Tensor"] if weight else []),
                   *(["bias: torch.Tensor"] if bias else []), f"{eps_arg}: float"]
    axis = spec.get("axis")  # a middle dim (no weight or bias): moved last, and back after
    host = "\n".join([
        f"def {name}({', '.join(host_params)}) -> torch.Tensor:",
        f'    """{name} over the last {ndims} dim(s): each row of x.reshape(-1, n_cols) is one program."""'
        if axis is None else f'    """{name} over dim {axis}, moved last: each row is one program."""',
        "    x = x.contiguous()" if axis is None else f"    x = x.movedim({axis}, -1).contiguous()",
        f"    out = torch.empty(x.shape, dtype={dtype_of(match.ctx.outputs[0].get('dtype'))}, device=x.device)",
        f"    n_cols = math.prod(x.shape[-{ndims}:])" if ndims > 1 else "    n_cols = x.shape[-1]",
        "    rows = x.numel() // max(n_cols, 1)",
        f"    block = min(triton.next_power_of_2(n_cols), {max_block})",
        f"    {name}_kernel[(rows,)](x, {'weight' if weight else 'x'}, {'bias' if bias else 'x'}, out, n_cols, "
        f"{eps_arg}, HAS_WEIGHT={bool(weight)}, HAS_BIAS={bool(bias)},",
        f"        BLOCK=block, ONE_BLOCK=n_cols <= block, num_warps={warps})",
        "    return out" if axis is None else f"    return out.movedim(-1, {axis}).contiguous()",
    ])
    args = [ctx.forward_arg(spec["x"].index), *(ctx.param_access(p.ref) for p in (weight, bias) if p), eps_value]
    cls = model_class(ctx, [f"return {name}({', '.join(args)})"],
                      "Same constructor, parameters and forward signature as the reference's Model.")
    where = f"the last {ndims} dim(s)" if axis is None else f"dim {axis}"
    doc = (f"{match.kind} over {where} in Triton (offline engine, no LLM).\n\n"
           f"out = {formula}\nLaunch parameters: MAX_BLOCK={max_block}, num_warps={warps}.\n")
    return module_source(doc, [kernel, host, cls], uses_math=ndims > 1)
