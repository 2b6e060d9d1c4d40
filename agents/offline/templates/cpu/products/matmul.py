"""Matmul (torch.matmul / mm / bmm / mv, F.linear, nn.Linear, x @ W.t()) with the
elementwise ops that follow it fused into the store of the output tile, in C.

GEMM as in the well-kept CPU libraries: B is packed into NR-wide panels (see
gemm.py); OpenMP iterations own MC x NC blocks of the output (times the batch);
each walks K in KC steps, and for every NR-wide panel of B (kept in L1) every
MR-row strip of A is multiplied by the register-tiled micro-kernel. The last K
step applies the epilogue to the fp32 tile before its only final store.
Transposed operands are read through their strides, never copied. A vector on
the right (torch.mv) is a row-parallel dot product instead.

The ``blas`` variants hand the product to OpenBLAS (``cblas_sgemm``, its
OpenMP build: the judge's threads) or to oneDNN (``dnnl_sgemm``, OpenMP too; a small output over a long K is split along
K, one slice per thread; a batch of small products runs one product per thread) and applies the epilogue in one parallel
pass over the output; the search times it beside our own kernel and keeps
whichever is faster for the shape.
"""

from __future__ import annotations

from typing import Any

from ....ir.expr import Expr
from ...common import NotRenderable
from ...ops import formula
from ...spaces import param_space
from ..common import INLINE, CWriter, helper_names, module_source, omp_schedule, require_float32, simd_pragma
from ..mathlib import prelude
from .gemm import ISA, MICRO, NR_FN, PACK, PACK_FN

# Its output is a tensor it allocates (a pipeline may let a later stage write over it).
FRESH_OUTPUT = True

PARAM_SPACE: list[dict[str, Any]] = param_space("cpu", "matmul")

_RESERVED = {"a", "bp", "ab", "bpb", "ob", "bt", "ib", "jb", "k0", "kc", "j0", "i0", "mr", "nr", "tile", "rows_a",
             "panel", "o", "M", "N", "K", "sab", "sam", "sak", "sbpb", "batch", "first", "last", "i_end", "j_end",
             "mblocks", "nblocks", "acc", "x", "v_acc"}

_INDEX = {"full": "{v}_p[bt * M * N + i * N + j]", "col": "{v}_p[j]", "row": "{v}_p[bt * M + i]",
          "scalar": "{v}_p[0]"}
_INDEX_VEC = {"full": "{v}_p[i]", "scalar": "{v}_p[0]"}
_WHAT = {"full": "same shape as the output", "col": "one value per output column",
         "row": "one value per output row", "scalar": "a single value"}

GEMM = '''/* out = {what}, with a: (batch, M, K) through strides (sab, sam, sak) and B packed by pack_b.
   Each OpenMP iteration owns an MC x NC block of out[bt]; the epilogue runs on the last K step.
{docs}*/
void fused_matmul({params}) {{
{hoisted}    const int64_t mblocks = (M + {MC} - 1) / {MC}, nblocks = (N + {NC} - 1) / {NC};
    #pragma omp parallel for collapse(3) {schedule} if(batch * M * N * K >= KF_PAR_MIN)
    for (int64_t bt = 0; bt < batch; bt++) {{
        for (int64_t ib = 0; ib < mblocks; ib++) {{
            for (int64_t jb = 0; jb < nblocks; jb++) {{
                const float* ab = a + bt * sab;
                const float* bpb = bp + bt * sbpb;
                float* ob = out + bt * M * N;
                const int64_t i_end = (ib + 1) * {MC} < M ? (ib + 1) * {MC} : M;
                const int64_t j_end = (jb + 1) * {NC} < N ? (jb + 1) * {NC} : N;
                for (int64_t k0 = 0; k0 < K; k0 += {KC}) {{
                    const int64_t kc = K - k0 < {KC} ? K - k0 : {KC};
                    const int first = k0 == 0, last = k0 + kc >= K;
                    for (int64_t j0 = jb * {NC}; j0 < j_end; j0 += KF_NR) {{
                        const float* panel = bpb + (j0 / KF_NR) * K * KF_NR + k0 * KF_NR;
                        const int64_t nr = N - j0 < KF_NR ? N - j0 : KF_NR;
                        for (int64_t i0 = ib * {MC}; i0 < i_end; i0 += KF_MR) {{
                            const float* rows_a[KF_MR];
                            for (int r = 0; r < KF_MR; r++)
                                rows_a[r] = ab + (i0 + r < M ? i0 + r : M - 1) * sam + k0 * sak;
                            float tile[KF_MR * KF_NR];
                            kf_micro(kc, rows_a, sak, panel, tile);
                            const int64_t mr = M - i0 < KF_MR ? M - i0 : KF_MR;
                            for (int64_t r = 0; r < mr; r++) {{
                                const int64_t i = i0 + r;
                                float* o = ob + i * N + j0;
                                const float* t = tile + r * KF_NR;
                                if (!last) {{
                                    {simd}
                                    for (int64_t c = 0; c < nr; c++) o[c] = first ? t[c] : o[c] + t[c];
                                    continue;
                                }}
                                {simd}
                                for (int64_t c = 0; c < nr; c++) {{
                                    const int64_t j = j0 + c;
                                    const float acc = first ? t[c] : o[c] + t[c];
{epilogue}
                                    o[c] = {result};
                                }}
                            }}
                        }}
                    }}
                }}
            }}
        }}
    }}
}}'''

BLAS_GEMM = '''/* product bt of the batch into out: the BLAS rank's call, or split over K (below) */
static void kf_blas_product(const float* a, const float* b, float* out, int64_t bt, int64_t M, int64_t N,
                            int64_t K, int64_t sab, int64_t lda, int64_t ta, int64_t sbb, int64_t ldb, int64_t tb) {{
    if (M * N <= SPLIT_K_MAX_OUT && K >= SPLIT_K_MIN_RATIO * (M > N ? M : N)
               && omp_get_max_threads() > 1 && !omp_in_parallel()) {{
        /* a small output over a long K: OpenBLAS would split M or N, which leaves threads idle;
           each thread multiplies one K-slice into its own partial product, summed after */
        const int64_t T = omp_get_max_threads();
        int64_t used = 0;
        float* part = (float*)malloc((size_t)(T * M * N) * sizeof(float));
        #pragma omp parallel if(part != 0)
        {{
            const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
            const int64_t k0 = K * t / nt, k1 = K * (t + 1) / nt;
            if (t == 0) used = part ? nt : 0;
            if (part)
                KF_SGEMM(ta, tb, M, N, k1 - k0, a + bt * sab + (ta ? k0 * lda : k0), lda,
                         b + bt * sbb + (tb ? k0 : k0 * ldb), ldb, part + t * M * N, N);
        }}
        float* o = out + bt * M * N;
        if (used)
            for (int64_t e = 0; e < M * N; e++) {{
                float s = 0.0f;
                for (int64_t t = 0; t < used; t++) s += part[t * M * N + e];
                o[e] = s;
            }}
        else  /* no memory for the partial products: the plain product */
            KF_SGEMM(ta, tb, M, N, K, a + bt * sab, lda, b + bt * sbb, ldb, o, N);
        free(part);
    }} else
        KF_SGEMM(ta, tb, M, N, K, a + bt * sab, lda, b + bt * sbb, ldb, out + bt * M * N, N);
}}

/* out = {what}: the product by OpenBLAS, with a: (batch, M, K) at batch stride sab, row
   stride lda, transposed if ta; b: (batch, K, N) likewise (sbb, ldb, tb); then the epilogue.
{docs}*/
void fused_matmul({params}) {{
{hoisted}    /* many small products: one per thread at a time (OpenBLAS runs single-threaded inside an
       OpenMP region), not each one split over every thread. No region at all otherwise: an
       inactive one (if false) makes the library's own parallel region a nested team, whose
       threads are started anew on every call -- and the timed pass allows no new thread */
    const int by_batch = batch >= 2 * omp_get_max_threads() && M * N * K <= BATCH_PAR_MAX_WORK;
    if (by_batch) {{
        #pragma omp parallel for schedule(static)
        for (int64_t bt = 0; bt < batch; bt++)
            kf_blas_product(a, b, out, bt, M, N, K, sab, lda, ta, sbb, ldb, tb);
    }} else
        for (int64_t bt = 0; bt < batch; bt++)
            kf_blas_product(a, b, out, bt, M, N, K, sab, lda, ta, sbb, ldb, tb);
{epilogue_pass}}}'''

# Split-K in the BLAS rank: an output of at most this many elements, K at least this many
# times its longer side (KernelBench's 27 x 27 x 52429 product ran on one of two threads).
# The row-major product C = op(A) op(B) of the BLAS rank, by library (``blas`` parameter):
# OpenBLAS's cblas_sgemm, or oneDNN's dnnl_sgemm (its own blocking and JIT kernels; which
# is faster depends on the CPU and the shape, so the tuning pass times both).
SGEMM = {
    "openblas": """#include <cblas.h>
#define KF_SGEMM(ta, tb, M, N, K, A, lda, B, ldb, C, ldc) \\
    cblas_sgemm(CblasRowMajor, (ta) ? CblasTrans : CblasNoTrans, (tb) ? CblasTrans : CblasNoTrans, \\
                (blasint)(M), (blasint)(N), (blasint)(K), 1.0f, (A), (blasint)(lda), (B), (blasint)(ldb), 0.0f, \\
                (C), (blasint)(ldc))""",
    "dnnl": """#include <oneapi/dnnl/dnnl.h>
#define KF_SGEMM(ta, tb, M, N, K, A, lda, B, ldb, C, ldc) \\
    dnnl_sgemm((ta) ? 'T' : 'N', (tb) ? 'T' : 'N', (dnnl_dim_t)(M), (dnnl_dim_t)(N), (dnnl_dim_t)(K), 1.0f, \\
               (A), (dnnl_dim_t)(lda), (B), (dnnl_dim_t)(ldb), 0.0f, (C), (dnnl_dim_t)(ldc))""",
}

SPLIT_K = """#include <omp.h>
#include <stdlib.h>
#define SPLIT_K_MAX_OUT 65536
#define SPLIT_K_MIN_RATIO 16
#define BATCH_PAR_MAX_WORK (1LL << 27)"""

EPILOGUE_PASS = '''    #pragma omp parallel for {schedule} if(batch * M * N >= KF_PAR_MIN)
    for (int64_t r = 0; r < batch * M; r++) {{
        const int64_t bt = r / M, i = r % M;
        float* o = out + r * N;
        {simd}
        for (int64_t j = 0; j < N; j++) {{
            const float acc = o[j];
{epilogue}
            o[j] = {result};
        }}
    }}
'''

MATVEC = '''/* out[i] = {what}, a dot product of row i of a (M, K) (strides sam, sak) with x (K).
{docs}*/
void fused_matvec({params}) {{
{hoisted}    #pragma omp parallel for {schedule} if(M * K >= KF_PAR_MIN)
    for (int64_t i = 0; i < M; i++) {{
        const float* ar = a + i * sam;
        float s = 0.0f;
        {simd_sum}
        for (int64_t k = 0; k < K; k++) s += ar[k * sak] * x[k];
        const float acc = s;
{epilogue}
        out[i] = {result};
    }}
}}'''


def render(match: Any, params: dict[str, Any]) -> str:
    ctx = match.ctx.fresh()
    spec = match.spec
    root: Expr = spec["root"]
    vector = bool(spec.get("vector"))
    epi_leaves = [leaf for leaf in spec["leaves"] if id(leaf) in spec["kinds"]]
    require_float32(match.ctx.outputs[0].get("dtype"), spec["a"].dtype, spec["b"].dtype,
                    *(leaf.dtype for leaf in epi_leaves))
    writer = CWriter(ctx, {id(spec["mm"]): "acc"}, reserved=set(_RESERVED))
    names = {id(leaf): writer.name_for(leaf) for leaf in epi_leaves}
    loads, docs, leaf_params, hoisted = [], [], [], []
    for leaf in epi_leaves:
        v = names[id(leaf)]
        kind = spec["kinds"][id(leaf)]
        if leaf.kind == "random" and kind != "full":
            raise NotRenderable(f"{leaf.ref}: a random operand not shaped like the output")
        writer.values[id(leaf)] = v
        line = f"const float {v} = {(_INDEX_VEC if vector else _INDEX)[kind].format(v=v)};"
        # a scalar operand is read once, before the loops (a load inside them may alias the output)
        (hoisted if kind == "scalar" else loads).append(line)
        role = {"input": "input", "param": "parameter", "random": "dropout mask"}[leaf.kind]
        docs.append(f"   {v}_p: {role} `{leaf.ref}`, {_WHAT[kind]}")
        leaf_params.append(f"const float* {v}_p")
    result = writer.emit(root)
    scalars = list(writer.scalars)
    docs += [f"   {s}: constructor argument" for s in scalars]
    what = formula(root, ctx)
    pre = "".join(f"    {line}\n" for line in hoisted)
    blas = bool(params.get("blas")) and not vector
    indent = " " * (8 if vector else 12 if blas else 36)
    epilogue = "\n".join(indent + line for line in [*loads, *writer.lines])
    scalar_params = [f"float {s}" for s in scalars]
    if vector:
        c_params = ["const float* a", "const float* x", *leaf_params, "float* out", "int64_t M", "int64_t K",
                    "int64_t sam", "int64_t sak", *scalar_params]
        kernel = MATVEC.format(hoisted=pre, what=what, docs="\n".join(docs) + ("\n" if docs else ""), params=", ".join(c_params),
                               schedule=omp_schedule(params), simd_sum=simd_pragma({}, "reduction(+:s)"),
                               epilogue=epilogue, result=result)
        c_fns = [f"void fused_matvec({', '.join(c_params)})"]
        c_source = prelude(helper_names(kernel)) + "\n\n" + INLINE + "\n\n" + kernel
    elif blas:
        c_params = ["const float* a", "const float* b", *leaf_params, "float* out", "int64_t batch", "int64_t M",
                    "int64_t N", "int64_t K", "int64_t sab", "int64_t lda", "int64_t ta", "int64_t sbb",
                    "int64_t ldb", "int64_t tb", *scalar_params]
        epilogue_pass = "" if result == "acc" and not epilogue.strip() else EPILOGUE_PASS.format(
            schedule=omp_schedule(params), simd=simd_pragma({}), epilogue=epilogue, result=result)
        kernel = BLAS_GEMM.format(hoisted=pre, what=what, docs="\n".join(docs) + ("\n" if docs else ""),
                                  params=", ".join(c_params), epilogue_pass=epilogue_pass)
        c_fns = [f"void fused_matmul({', '.join(c_params)})"]
        c_source = "\n\n".join([prelude(helper_names(kernel)), SGEMM[str(params["blas"])], SPLIT_K, INLINE, kernel])
    else:
        c_params = ["const float* a", "const float* bp", *leaf_params, "float* out", "int64_t batch", "int64_t M",
                    "int64_t N", "int64_t K", "int64_t sab", "int64_t sam", "int64_t sak", "int64_t sbpb",
                    *scalar_params]
        kernel = GEMM.format(hoisted=pre, what=what, docs="\n".join(docs) + ("\n" if docs else ""), params=", ".join(c_params),
                             MC=params["MC"], NC=params["NC"], KC=params["KC"], schedule=omp_schedule(params),
                             simd=simd_pragma({}), epilogue=epilogue, result=result)
        c_fns = [NR_FN, PACK_FN, f"void fused_matmul({', '.join(c_params)})"]
        c_source = "\n\n".join([prelude(helper_names(kernel)), ISA, INLINE, PACK, MICRO, kernel])
    # each operand as the host passes it: contiguous, or (dropout's mask) drawn like the output
    operands = [ctx.draw(leaf, "out") if leaf.kind == "random" else f"{names[id(leaf)]}.contiguous()"
                for leaf in epi_leaves]
    host = (_blas_host if blas else _host)(spec, [names[id(leaf)] for leaf in epi_leaves], operands, scalars, vector)
    call = [ctx.leaf_arg(spec["a"]), ctx.leaf_arg(spec["b"]), *(ctx.leaf_arg(leaf, drawn=True) for leaf in epi_leaves),
            *writer.scalars.values()]
    knobs = "schedule=" + str(params["schedule"]) if vector else ", ".join(f"{k}={v}" for k, v in params.items())
    if blas:
        knobs = ("product by oneDNN (dnnl_sgemm)" if params["blas"] == "dnnl" else "product by OpenBLAS (cblas_sgemm)") \
            + f", epilogue schedule={params['schedule']}"
    doc = (f"{match.kind} in C, epilogue fused (offline engine, no LLM, backend cpu).\n\n"
           f"out = {what}\nParameters: {knobs}.\n")
    return module_source(doc, c_source, c_fns, "fused_matvec" if vector else "fused_matmul", [host], ctx,
                         [f"return {'fused_matvec' if vector else 'fused_matmul'}({', '.join(call)})"])


def _host(spec: dict[str, Any], leaves: list[str], operands: list[str], scalars: list[str], vector: bool) -> str:
    a_view = ".transpose(-2, -1)" if spec["a_t"] else ""
    b_view = ".transpose(-2, -1)" if spec["b_t"] else ""
    params = ["a_in: torch.Tensor", "b_in: torch.Tensor", *(f"{v}: torch.Tensor" for v in leaves),
              *(f"{s}: float" for s in scalars)]
    leaf_args = "".join(f"{a}, " for a in operands)
    tail = "".join(f", {s}" for s in scalars)
    name = "fused_matvec" if vector else "fused_matmul"
    lines = [f"def {name}({', '.join(params)}) -> torch.Tensor:",
             '    """Views and strides on the host; a transposed operand is read in place."""',
             "    a_in, b_in = a_in.contiguous(), b_in.contiguous()",
             f"    a = a_in{a_view}  # (..., M, K)"]
    if vector:
        lines += ["    out_shape = a.shape[:-1]",
                  "    a = a.reshape(-1, a.shape[-1])",
                  "    a_base = a if a.is_contiguous() else a_in  # otherwise a is a view of a_in",
                  "    out = torch.empty(out_shape, dtype=torch.float32, device=a.device)",
                  "    if out.numel():",
                  f"        lib.fused_matvec(a_base, b_in, {leaf_args}out, a.shape[0], a.shape[1], "
                  f"a.stride(0), a.stride(1){tail})",
                  "    return out"]
        return "\n".join(lines)
    lines.append(f"    b = b_in{b_view}  # ({'..., ' if spec['batched'] else ''}K, N)")
    lines.append("    out_shape = (*a.shape[:-1], b.shape[-1])")
    if spec["batched"]:
        lines += ["    a = a.reshape(-1, a.shape[-2], a.shape[-1])",
                  "    b = b.reshape(-1, b.shape[-2], b.shape[-1])",
                  "    batch, (M, K), N = a.shape[0], a.shape[1:], b.shape[-1]",
                  "    sab, sbb = a.stride(0), b.stride(0)"]
    else:
        lines += ["    a = a.reshape(-1, a.shape[-1])",
                  "    b = b.reshape(1, b.shape[-2], b.shape[-1])",
                  "    batch, (M, K), N = 1, a.shape, b.shape[-1]",
                  "    sab, sbb = 0, 0"]
    lines += ["    a_base = a if a.is_contiguous() else a_in  # otherwise a is a view of a_in",
              "    b_base = b if b.is_contiguous() else b_in",
              "    out = scratch.empty(out_shape, dtype=torch.float32, device=a.device)",
              "    if out.numel() == 0:",
              "        return out",
              "    if K == 0:",
              "        raise ValueError('an empty inner dimension is not supported')",
              "    nr = lib.kf_nr()",
              "    panels = (N + nr - 1) // nr",
              "    bp = scratch.empty(b.shape[0] * panels * K * nr, dtype=torch.float32, device=a.device)",
              "    lib.pack_b(b_base, bp, b.shape[0], K, N, sbb, b.stride(-2), b.stride(-1))",
              f"    lib.fused_matmul(a_base, bp, {leaf_args}out, batch, M, N, K, sab, a.stride(-2), a.stride(-1), "
              f"panels * K * nr if b.shape[0] > 1 else 0{tail})",
              "    scratch.give(bp)  # the packed panels, for the next call's: no fresh pages a call",
              "    return out"]
    return "\n".join(lines)


def _blas_host(spec: dict[str, Any], leaves: list[str], operands: list[str], scalars: list[str], vector: bool) -> str:
    """The host side of the BLAS variant: each operand passed as the
    contiguous tensor under it, with its leading dimension and whether it is
    read transposed (a layout BLAS cannot read is copied first)."""
    a_view = ".transpose(-2, -1)" if spec["a_t"] else ""
    b_view = ".transpose(-2, -1)" if spec["b_t"] else ""
    params = ["a_in: torch.Tensor", "b_in: torch.Tensor", *(f"{v}: torch.Tensor" for v in leaves),
              *(f"{s}: float" for s in scalars)]
    leaf_args = "".join(f"{a}, " for a in operands)
    tail = "".join(f", {s}" for s in scalars)
    lines = [f"def fused_matmul({', '.join(params)}) -> torch.Tensor:",
             '    """Views and strides on the host; OpenBLAS reads a transposed operand in place."""',
             "    a = a_in.contiguous()" + a_view + "  # (..., M, K)",
             "    b = b_in.contiguous()" + b_view + "  # (..., K, N)",
             "    out_shape = (*a.shape[:-1], b.shape[-1])"]
    if spec["batched"]:
        lines += ["    a = a.reshape(-1, a.shape[-2], a.shape[-1])",
                  "    b = b.reshape(-1, b.shape[-2], b.shape[-1])"]
    else:
        lines += ["    a = a.reshape(1, -1, a.shape[-1])",
                  "    b = b.reshape(1, b.shape[-2], b.shape[-1])"]
    lines += ["    batch, M, K, N = a.shape[0], a.shape[1], a.shape[2], b.shape[-1]",
              "    a, a_base, ta, lda = blas_operand(a)",
              "    b, b_base, tb, ldb = blas_operand(b)",
              "    out = scratch.empty(out_shape, dtype=torch.float32, device=a.device)",
              "    if out.numel() == 0:",
              "        return out",
              "    if K == 0:",
              "        raise ValueError('an empty inner dimension is not supported')",
              "    sbb = b.stride(0) if b.shape[0] > 1 else 0",
              f"    lib.fused_matmul(a_base, b_base, {leaf_args}out, batch, M, N, K, a.stride(0), lda, ta, sbb, ldb, tb"
              f"{tail})",
              "    return out",
              "",
              "",
              "def blas_operand(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int, int]:",
              '    """(t, the contiguous tensor its data is, transposed?, leading dimension) for (batch, rows, cols) t."""',
              "    rows, cols = t.shape[-2], t.shape[-1]",
              "    base = t if t.is_contiguous() else t.transpose(-2, -1)",
              "    if base.is_contiguous() and t.stride(-1) == 1 and t.stride(-2) >= max(1, cols):",
              "        return t, base, 0, t.stride(-2)",
              "    if base.is_contiguous() and t.stride(-2) == 1 and t.stride(-1) >= max(1, rows):",
              "        return t, base, 1, t.stride(-1)",
              "    t = t.contiguous()",
              "    return t, t, 0, max(1, cols)"]
    return "\n".join(lines)
