"""The implicit-GEMM convolution kernel in C: per sample and group,

    y[n, g*kg + m, p] = sum over r of wm[g*kg + m, r] * col[r, p]

with r running over (input channel of the group, window tap) and p over the output
positions. ``col`` is never built whole: each OpenMP iteration packs one NR-wide panel
of it straight from the input (zeros where a tap falls in the padding or, transposed,
where the stride does not divide) and multiplies it by every MR-row strip of the
weight matrix with gemm.py's register-tiled micro-kernel; the epilogue runs on the
tile before its only store. The host lays the weight out as ``wm`` (K, C/groups *
taps), rows contiguous: a view for a convolution, one small copy for a transposed one.

A transposed convolution is the same gather with the index rule turned around: output
o reads input (o + padding - tap * dilation) / stride where that divides.
"""

from __future__ import annotations

# the input row (id, ih) a tap (a, b) reads for output row (od, oh); `continue`s when none
FORWARD_ROW = """const int64_t id = od * sd - pd + a * dd, ih = oh * sh - ph + b * dh;
                        if (id < 0 || id >= D || ih < 0 || ih >= H) {{ zero = 1; }}"""
TRANSPOSED_ROW = """const int64_t td = od + pd - a * dd, th = oh + ph - b * dh;
                        const int64_t id = td / sd, ih = th / sh;
                        if (td < 0 || td % sd || id >= D || th < 0 || th % sh || ih >= H) {{ zero = 1; }}"""
# along the row: output ow reads input ow * sw + off (forward), or (ow + off) / sw where
# that divides (transposed); [lo, hi) are the segment's columns that read inside the row
FORWARD_COLS = """const int64_t off = e * dw - pw;
                        int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw, hi = W - off <= 0 ? 0 : (W - off + sw - 1) / sw;
                        lo = lo - ow0 < 0 ? 0 : lo - ow0; hi = hi - ow0 > len ? len : hi - ow0;
                        if (hi < lo) hi = lo;
                        for (int64_t jj = 0; jj < lo; jj++) ds[jj] = 0.0f;
                        {simd}
                        for (int64_t jj = lo; jj < hi; jj++) ds[jj] = xr[(ow0 + jj) * sw + off];
                        for (int64_t jj = hi; jj < len; jj++) ds[jj] = 0.0f;"""
TRANSPOSED_COLS = """const int64_t off = pw - e * dw;
                        if (sw == 1) {{  /* a stride-1 transposed row is a forward one at offset off */
                            int64_t lo = off >= 0 ? 0 : -off, hi = W - off <= 0 ? 0 : W - off;
                            lo = lo - ow0 < 0 ? 0 : lo - ow0; hi = hi - ow0 > len ? len : hi - ow0;
                            if (hi < lo) hi = lo;
                            for (int64_t jj = 0; jj < lo; jj++) ds[jj] = 0.0f;
                            {simd}
                            for (int64_t jj = lo; jj < hi; jj++) ds[jj] = xr[ow0 + jj + off];
                            for (int64_t jj = hi; jj < len; jj++) ds[jj] = 0.0f;
                            continue;
                        }}
                        for (int64_t jj = 0; jj < len; jj++) {{
                            const int64_t t = ow0 + jj + off, iw = t / sw;
                            ds[jj] = t >= 0 && t % sw == 0 && iw < W ? xr[iw] : 0.0f;
                        }}"""

KERNEL = '''/* {what}
   x: (N, C, D, H, W); wm: (K, C / groups * kd * kh * kw), rows contiguous; y: (N, K, OD, OH, OW).
   k*, s*, p*, d*: window, stride, padding, dilation per dim (1, 1, 0, 1 for absent dims).{docs} */
void {fn}({args}) {{
    const int64_t cg = C / groups, kg = K / groups, T = kd * kh * kw, R = cg * T, P = OD * OH * OW;
    const int64_t panels = (P + KF_NR - 1) / KF_NR;
    const int64_t work = N * K * P * R;
    #pragma omp parallel if(work > {par_min})
    {{
        float* bp = (float*)malloc((size_t)R * KF_NR * sizeof(float));
        float tile[KF_MR * KF_NR];
        int64_t sj[KF_NR], sd_[KF_NR], sh_[KF_NR], sw_[KF_NR], sl[KF_NR];
        #pragma omp for collapse(3) {schedule}
        for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < groups; g++)
        for (int64_t pp = 0; pp < panels; pp++) {{
            const int64_t p0 = pp * KF_NR, nj = P - p0 < KF_NR ? P - p0 : KF_NR;
            /* the panel's positions as runs along an output row: (first column, od, oh, ow0, length) */
            int64_t ns = 0;
            for (int64_t j = 0; j < nj; ns++) {{
                const int64_t p = p0 + j, ow0 = p % OW;
                sj[ns] = j; sd_[ns] = p / (OW * OH); sh_[ns] = (p / OW) % OH; sw_[ns] = ow0;
                sl[ns] = OW - ow0 < nj - j ? OW - ow0 : nj - j;
                j += sl[ns];
            }}
            for (int64_t c = 0; c < cg; c++) {{
                const float* xc = x + (n * C + g * cg + c) * D * H * W;
                for (int64_t a = 0; a < kd; a++)
                for (int64_t b = 0; b < kh; b++)
                for (int64_t e = 0; e < kw; e++) {{
                    float* dst = bp + (((c * kd + a) * kh + b) * kw + e) * KF_NR;
                    for (int64_t s = 0; s < ns; s++) {{
                        const int64_t od = sd_[s], oh = sh_[s], ow0 = sw_[s], len = sl[s];
                        float* ds = dst + sj[s];
                        int zero = 0;
                        {row}
                        if (zero) {{
                            for (int64_t jj = 0; jj < len; jj++) ds[jj] = 0.0f;
                            continue;
                        }}
                        const float* xr = xc + (id * H + ih) * W;
                        {cols}
                    }}
                    for (int64_t j = nj; j < KF_NR; j++) dst[j] = 0.0f;
                }}
            }}
            for (int64_t m0 = 0; m0 < kg; m0 += KF_MR) {{
                const float* a_rows[KF_MR];
                for (int r = 0; r < KF_MR; r++) a_rows[r] = wm + (g * kg + (m0 + r < kg ? m0 + r : kg - 1)) * R;
                kf_micro(R, a_rows, 1, bp, tile);
                const int64_t mr = kg - m0 < KF_MR ? kg - m0 : KF_MR;
                for (int64_t r = 0; r < mr; r++) {{
                    const int64_t k = g * kg + m0 + r, row = n * K + k;
                    float* yr = y + row * P + p0;
                    const float* tr = tile + r * KF_NR;
                    {simd}
                    for (int64_t j = 0; j < nj; j++) {{
                        const int64_t p = p0 + j;
                        (void)p;
                        const float acc = tr[j]{bias};
{epilogue}
                        yr[j] = {result};
                    }}
                }}
            }}
        }}
        free(bp);
    }}
}}'''


def kernel(transposed: bool, **fields: str) -> str:
    """The C function, ``fields`` filling KERNEL's other slots."""
    row = TRANSPOSED_ROW if transposed else FORWARD_ROW
    cols = (TRANSPOSED_COLS if transposed else FORWARD_COLS).replace("{simd}", fields["simd"])
    return KERNEL.format(row=row.replace("{{", "{").replace("}}", "}"), cols=cols.replace("{{", "{").replace("}}", "}"),
                         **fields)
