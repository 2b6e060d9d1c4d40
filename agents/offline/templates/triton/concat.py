"""``torch.cat`` along one dim in Triton: a copy. The output is read as (outer, total x
inner) and input k as (outer, n_k x inner); each program copies BLOCK elements of one
input row to its offset in the output row (one flat grid over every input row's blocks)."""

from __future__ import annotations

from typing import Any

from ..common import model_class, module_source
from ..spaces import param_space

PARAM_SPACE: list[dict[str, Any]] = param_space("triton", "concat")

KERNEL = '''@triton.jit
def concat_part_kernel(x_ptr, y_ptr, chunk, row, offset, per_row, BLOCK: tl.constexpr):
    """y[o, offset + j] = x[o, j] for j < chunk (elements): one input's part of every
    output row, per_row programs a row."""
    pid = tl.program_id(0).to(tl.int64)
    o = pid // per_row
    j = (pid % per_row) * BLOCK + tl.arange(0, BLOCK)
    mask = j < chunk
    tl.store(y_ptr + o * row + offset + j, tl.load(x_ptr + o * chunk + j, mask=mask), mask=mask)
'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    dim, block, warps = spec["dim"], params["BLOCK"], params["num_warps"]
    host = "\n".join([
        "def concat(xs: list[torch.Tensor]) -> torch.Tensor:",
        f'    """torch.cat(xs, dim={dim}), one input\'s part a launch."""',
        "    xs = [x.contiguous() for x in xs]",
        f"    shape = [*xs[0].shape[:{dim}], sum(x.shape[{dim}] for x in xs), *xs[0].shape[{dim} + 1:]]",
        "    out = torch.empty(shape, dtype=xs[0].dtype, device=xs[0].device)",
        "    if out.numel() == 0:",
        "        return out",
        "    outer = 1",
        f"    for n in shape[:{dim}]:",
        "        outer *= n",
        "    row, offset = out.numel() // outer, 0",
        "    for x in xs:",
        "        chunk = x.numel() // outer",
        "        if chunk:",
        f"            per_row = triton.cdiv(chunk, {block})",
        f"            concat_part_kernel[(outer * per_row,)](x, out, chunk, row, offset, per_row, BLOCK={block},",
        f"                                                   num_warps={warps})",
        "        offset += chunk",
        "    return out"])
    args = ", ".join(ctx.forward_arg(x.index) for x in spec["xs"])
    cls = model_class(ctx, [f"return concat([{args}])"], "Same constructor and forward signature as the reference's Model.")
    doc = (f"{match.kind} in Triton (offline engine, no LLM).\n\n"
           f"Launch parameters: BLOCK={block}, num_warps={warps}.\n")
    return module_source(doc, [KERNEL, host, cls])
