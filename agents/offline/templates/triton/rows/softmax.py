"""Softmax and log-softmax along one dim, one Triton program per row.

Rows that fit in one block are loaded once and kept in registers; longer rows
take an online pass (running max and rescaled running sum over column blocks)
and a second pass that writes. A dim other than the last is moved last first.
"""

from __future__ import annotations

from typing import Any

from ...common import NotRenderable, dtype_of, model_class, module_source
from ...spaces import param_space
from .row import ROW_START

PARAM_SPACE: list[dict[str, Any]] = param_space("triton", "softmax")

KERNEL = '''@triton.jit
def {name}_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr, ONE_BLOCK: tl.constexpr):
    """Program r writes {what} of row r of a contiguous (rows, n_cols) matrix.

    x_ptr, out_ptr: input and output rows, contiguous
    n_cols: row length
    BLOCK: columns per step, a power of two
    ONE_BLOCK: the whole row fits in one BLOCK (n_cols <= BLOCK)
    """
''' + ROW_START + '''\
        x = tl.load(x_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
        row_max = tl.max(x, axis=0)
        shifted = x - row_max
        num = tl.exp(shifted)
        den = tl.sum(num, axis=0)
        {one_block_store}
    else:
        # online pass: the running max m and the sum s of exp(x - m), rescaled whenever m grows
        m = tl.full((BLOCK,), -float("inf"), tl.float32)
        s = tl.zeros((BLOCK,), tl.float32)
        for start in range(0, n_cols, BLOCK):
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=-float("inf")).to(tl.float32)
            m_new = tl.maximum(m, x)
            # lanes that have only seen -inf (padding) have nothing to rescale
            s = s * tl.where(m_new == -float("inf"), 0.0, tl.exp(m - m_new)) + \\
                tl.where(x == -float("inf"), 0.0, tl.exp(x - m_new))
            m = m_new
        row_max = tl.max(m, axis=0)
        den = tl.sum(tl.where(m == -float("inf"), 0.0, s * tl.exp(m - row_max)), axis=0)
        for start in range(0, n_cols, BLOCK):
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
            shifted = x - row_max
            {looped_store}
'''

_STORE = {
    False: ("tl.store(out_row + cols, num / den, mask=mask)",
            "tl.store(out_row + start + cols, tl.exp(shifted) / den, mask=mask)"),
    True: ("tl.store(out_row + cols, shifted - tl.log(den), mask=mask)",
           "tl.store(out_row + start + cols, shifted - tl.log(den), mask=mask)"),
}


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    if spec.get("anchor") is not None:
        raise NotRenderable("pointwise ops fused after the softmax (the pipeline writes them as stages)")
    log, dim, nd = spec["log"], spec["dim"], len(spec["out_shape"])
    name = "log_softmax" if log else "softmax"
    max_block, warps = params["MAX_BLOCK"], params["num_warps"]
    one, looped = _STORE[log]
    what = "log(softmax(x))" if log else "softmax(x) = exp(x - max) / sum(exp(x - max))"
    kernel = KERNEL.format(name=name, what=what, one_block_store=one, looped_store=looped)
    last = dim == nd - 1
    move_in = [] if last else [f"x = x.movedim({dim}, -1)"]
    move_out = "out" if last else f"out.movedim(-1, {dim})"
    host = "\n".join([
        f"def {name}(x: torch.Tensor) -> torch.Tensor:",
        f'    """{name} along dim {dim}: rows of the last dim, one program each."""',
        *(f"    {line}" for line in move_in),
        "    x = x.contiguous()",
        f"    out = torch.empty(x.shape, dtype={dtype_of(match.ctx.outputs[0].get('dtype'))}, device=x.device)",
        "    n_cols = x.shape[-1]",
        "    rows = x.numel() // max(n_cols, 1)",
        f"    block = min(triton.next_power_of_2(n_cols), {max_block})",
        f"    {name}_kernel[(rows,)](x, out, n_cols, BLOCK=block, ONE_BLOCK=n_cols <= block, num_warps={warps})",
        f"    return {move_out}",
    ])
    arg = ctx.forward_arg(spec["x"].index)
    cls = model_class(ctx, [f"return {name}({arg})"],
                      "Same constructor and forward signature as the reference's Model.")
    doc = (f"{match.kind} along dim {dim} in Triton (offline engine, no LLM).\n\n"
           f"Launch parameters: MAX_BLOCK={max_block}, num_warps={warps}.\n")
    return module_source(doc, [kernel, host, cls])
