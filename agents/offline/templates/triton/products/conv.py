"""Convolution and transposed convolution, 1-3D, in Triton, as an implicit GEMM: any
stride, padding, dilation, groups and output padding, read at run time; the bias and
the matched elementwise epilogue applied to the tile before its one store.

Computed as 3-D over (N, C, D, H, W). A program owns a BLOCK_M x BLOCK_N tile: BLOCK_M
output positions (n, od, oh, ow flattened) by BLOCK_N output channels of one group. It
walks the group's reduction -- (input channel, window tap) pairs, BLOCK_K at a time --
gathering the input patch with masked loads (zero outside the input) and multiplying it
with the weight slice by ``tl.dot`` (ieee precision in fp32). The transposed convolution
gathers the same way: output o reads input (o + padding - tap * dilation) / stride where
that divides and lies inside.
"""

from __future__ import annotations

from typing import Any

from ... import conv_host
from ...common import ExprWriter, dtype_of, helper_source, model_class, module_source, triton_epilogue
from ...spaces import param_space

PARAM_SPACE: list[dict[str, Any]] = param_space("triton", "conv")

_RESERVED = {"acc", "x_ptr", "w_ptr", "b_ptr", "y_ptr", "g", "cg", "kg", "nbn", "offs_m", "offs_n", "mask_m",
             "mask_n", "ow", "oh", "od", "n", "r", "c", "s", "a", "b", "e", "xv", "wv", "inside", "y_offs", "y_mask",
             "pid_m", "pid_n", "mask_r", "KS", "R", "td", "th", "tw", "idd", "ih", "iw", "x_offs", "w_offs", "r0"}

# input coordinates of the (position, reduction) pairs and whether they lie inside
FORWARD = '''        idd = od[:, None] * sd - pd + a[None, :] * dd
        ih = oh[:, None] * sh - ph + b[None, :] * dh
        iw = ow[:, None] * sw - pw + e[None, :] * dw
        inside = (idd >= 0) & (idd < D) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        w_offs = offs_n[None, :] * R + r[:, None]'''
TRANSPOSED = '''        td = od[:, None] + pd - a[None, :] * dd
        th = oh[:, None] + ph - b[None, :] * dh
        tw = ow[:, None] + pw - e[None, :] * dw
        idd = td // sd
        ih = th // sh
        iw = tw // sw
        inside = (td >= 0) & (th >= 0) & (tw >= 0) & (idd * sd == td) & (ih * sh == th) & (iw * sw == tw) & \\
            (idd < D) & (ih < H) & (iw < W)
        w_offs = ((g * cg + c[:, None]) * kg + (offs_n[None, :] - g * kg)) * KS + s[:, None]'''

KERNEL = '''@triton.jit
def conv_kernel(x_ptr, w_ptr, {ptrs}y_ptr, N, C, D, H, W, K, OD, OH, OW, kd, kh, kw, sd, sh, sw, pd, ph, pw,
                dd, dh, dw, groups, {scalars}BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """y = {what}; x: (N, C, D, H, W), w: {wshape}, y: (N, K, OD, OH, OW), contiguous.

    Program (pid_m, pid_n): BLOCK_M output positions by BLOCK_N output channels of one group,
    reduced over the group's (input channel, tap) pairs BLOCK_K at a time with tl.dot.{docs}
    """
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    cg = C // groups
    kg = K // groups
    nbn = tl.cdiv(kg, BLOCK_N)
    g = pid_n // nbn
    offs_n = g * kg + (pid_n % nbn) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_n = offs_n < (g + 1) * kg
    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    mask_m = offs_m < N * OD * OH * OW
    ow = offs_m % OW
    oh = (offs_m // OW) % OH
    od = (offs_m // (OW * OH)) % OD
    n = offs_m // (OW * OH * OD)
    KS = kd * kh * kw
    R = cg * KS
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for r0 in range(0, R, BLOCK_K):
        r = r0 + tl.arange(0, BLOCK_K)
        mask_r = r < R
        s = r % KS
        c = r // KS
        e = s % kw
        b = (s // kw) % kh
        a = s // (kw * kh)
{taps}
        x_offs = (((n[:, None] * C + g * cg + c[None, :]) * D + idd) * H + ih) * W + iw
        xv = tl.load(x_ptr + x_offs, mask=mask_m[:, None] & mask_r[None, :] & inside, other=0.0)
        wv = tl.load(w_ptr + w_offs, mask=mask_r[:, None] & mask_n[None, :], other=0.0)
        acc += tl.dot(xv.to(tl.float32), wv.to(tl.float32){precision})
{bias}    y_offs = ((n[:, None] * K + offs_n[None, :]) * OD + od[:, None]) * (OH * OW) + (oh * OW + ow)[:, None]
    y_mask = mask_m[:, None] & mask_n[None, :]
{epilogue}    tl.store(y_ptr + y_offs, {result}, mask=y_mask)
'''

LAUNCH = '''{prep}    OD, OH, OW = pad3(out_sp, 1)
    grid = (triton.cdiv(N * OD * OH * OW, {bm}), groups * triton.cdiv(K // groups, {bn}))
    conv_kernel[grid](x, w, {ptrs}y, N, C, *pad3(x.shape[2:], 1), K, OD, OH, OW, *pad3(w.shape[2:], 1),
                      *pad3(stride, 1), *pad3(padding, 0), *pad3(dilation, 1), groups, {scalars}
                      BLOCK_M={bm}, BLOCK_N={bn}, BLOCK_K={bk}, num_warps={warps}, num_stages={stages})
    return y
'''

_LOADS = {
    "scalar": "tl.load({v}_ptr)",
    "channel": "tl.load({v}_ptr + offs_n, mask=mask_n, other=0.0)[None, :]",
    "full": "tl.load({v}_ptr + y_offs, mask=y_mask, other=0.0)",
}


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    transposed, x, bias = spec["transposed"], spec["x"], spec["bias"]
    writer = ExprWriter(ctx, {id(spec["conv"]): "acc"}, reserved=set(_RESERVED))
    ep = triton_epilogue(writer, spec, _LOADS, "    ")
    names, loads, docs, result = ep.names, ep.loads, ep.docs, ep.result
    scalars = list(writer.scalars)
    ptr_args = (["b_ptr"] if bias is not None else []) + [f"{v}_ptr" for v in names]
    bias_line = "    acc += tl.load(b_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)[None, :]\n" \
        if bias is not None else ""
    precision = ', input_precision="ieee"' if x.dtype == "float32" else ""
    kernel = KERNEL.format(ptrs="".join(p + ", " for p in ptr_args), scalars="".join(s + ", " for s in scalars),
                           what=match.kind, taps=TRANSPOSED if transposed else FORWARD, precision=precision,
                           wshape="(C, K / groups, kd, kh, kw)" if transposed else "(K, C / groups, kd, kh, kw)",
                           docs="".join(f"\n    {d}" for d in docs), bias=bias_line,
                           epilogue="".join(loads) + "".join(f"    {line}\n" for line in writer.lines), result=result)
    extra = "".join(f", {v}: torch.Tensor" for v in names) + "".join(f", {s}: float" for s in scalars)
    host = conv_host.head(spec, " as an implicit GEMM", extra, dtype_of(match.ctx.outputs[0].get("dtype"))) + \
        LAUNCH.format(prep="".join(f"    {v} = {v}.contiguous()\n" for v in names),
                      ptrs="".join(p + ", " for p in (["b"] if bias is not None else []) + names),
                      scalars="".join(s + ", " for s in scalars), bm=params["BLOCK_M"], bn=params["BLOCK_N"],
                      bk=params["BLOCK_K"], warps=params["num_warps"], stages=params["num_stages"])
    call = [*conv_host.call_args(ctx, spec), *(ctx.leaf_arg(leaf) for leaf in spec["epilogue"]),
            *writer.scalars.values()]
    cls = model_class(ctx, [f"return conv({', '.join(call)})"],
                      "Same constructor, parameters and forward signature as the reference's Model.")
    knobs = ", ".join(f"{k}={v}" for k, v in params.items())
    doc = f"{match.kind} as an implicit-GEMM Triton kernel, epilogue fused (offline engine, no LLM).\n\n" \
          f"Launch parameters: {knobs}.\n"
    return module_source(doc, [helper_source(writer.helpers), kernel, host, cls])
