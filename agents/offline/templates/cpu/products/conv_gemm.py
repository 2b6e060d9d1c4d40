"""The implicit-GEMM convolution kernels in C: per sample and group,

    y[n, g*kg + m, p] = sum over r of wm[g*kg + m, r] * col[r, p]

with r running over (input channel of the group, window tap) and p over the output
positions. ``col`` is never built whole: each OpenMP iteration packs one NR-wide panel
of it straight from the input (runs along an output row copied as vectors, zeros where
a tap falls in the padding) and multiplies it by every MR-row strip of the weight
matrix with gemm.py's register-tiled micro-kernel; the epilogue runs on the tile
before its only store.

A transposed convolution with stride s is split into its s^3 output phases (output o
with o % s == phi along each dim): output o reads input (o + padding - tap * dilation)
/ stride, which divides for a fixed set of taps per phase, at input q + offset(tap) for
o = q * s + phi. So each phase is a stride-1 correlation over q with its own taps: the
kernel regroups the weight per phase once per call, then panels run over one phase's
positions, packing only the taps that phase reads -- no multiplications by zeros.
"""

from __future__ import annotations

# the input row (id, ih) a tap (a, b) reads for output row (od, oh); zero when none
FORWARD_ROW = """const int64_t id = od * sd - pd + a * dd, ih = oh * sh - ph + b * dh;
                        if (id < 0 || id >= D || ih < 0 || ih >= H) {{ zero = 1; }}"""
# along the row: output ow reads input ow * sw + off; [lo, hi) are the segment's columns
# that read inside the row
FORWARD_COLS = """const int64_t off = e * dw - pw;
                        int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw, hi = W - off <= 0 ? 0 : (W - off + sw - 1) / sw;
                        lo = lo - ow0 < 0 ? 0 : lo - ow0; hi = hi - ow0 > len ? len : hi - ow0;
                        if (lo > len) lo = len;
                        if (hi < lo) hi = lo;
                        for (int64_t jj = 0; jj < lo; jj++) ds[jj] = 0.0f;
                        {simd}
                        for (int64_t jj = lo; jj < hi; jj++) ds[jj] = xr[(ow0 + jj) * sw + off];
                        for (int64_t jj = hi; jj < len; jj++) ds[jj] = 0.0f;"""
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


TRANSPOSED = '''/* {what}
   x: (N, C, D, H, W); w: (C, K / groups, kd, kh, kw); y: (N, K, OD, OH, OW).
   k*, s*, p*, d*: window, stride, padding, dilation per dim (1, 1, 0, 1 for absent dims).{docs} */
void {fn}({args}) {{
    const int64_t cg = C / groups, kg = K / groups, P = OD * OH * OW;
    const int64_t ks[3] = {{kd, kh, kw}}, ss[3] = {{sd, sh, sw}}, ps[3] = {{pd, ph, pw}}, ds[3] = {{dd, dh, dw}};
    const int64_t os[3] = {{OD, OH, OW}}, phases = sd * sh * sw;
    /* per dim and phase phi: the taps t with (phi + p - t * d) % s == 0 and their input offsets */
    int64_t* nt1 = (int64_t*)calloc(3 * (sd + sh + sw), sizeof(int64_t));
    int64_t* tap1 = (int64_t*)malloc(sizeof(int64_t) * 3 * (sd + sh + sw) * (kd + kh + kw));
    int64_t* off1 = (int64_t*)malloc(sizeof(int64_t) * 3 * (sd + sh + sw) * (kd + kh + kw));
    const int64_t stride1 = kd + kh + kw, base1[3] = {{0, sd, sd + sh}};
    for (int dim = 0; dim < 3; dim++)
        for (int64_t phi = 0; phi < ss[dim]; phi++) {{
            const int64_t slot = base1[dim] + phi;
            for (int64_t t = 0; t < ks[dim]; t++) {{
                const int64_t u = phi + ps[dim] - t * ds[dim];
                if (((u % ss[dim]) + ss[dim]) % ss[dim]) continue;
                tap1[slot * stride1 + nt1[slot]] = t;
                off1[slot * stride1 + nt1[slot]] = u / ss[dim];
                nt1[slot]++;
            }}
        }}
    /* per phase f = (phd, phh, phw): its taps, its position grid, its panels, its weight matrix
       wp + wbase[f]: (K, cg * nt) rows contiguous, columns (c, tap of the phase) */
    int64_t* nt = (int64_t*)malloc(sizeof(int64_t) * phases * 6);
    int64_t *wbase = nt + phases, *q = nt + 2 * phases, *pbase = nt + 5 * phases;
    float* wp = (float*)malloc(sizeof(float) * (size_t)(K * cg * kd * kh * kw + 1));
    int64_t wsum = 0, panels = 0;
    for (int64_t f = 0; f < phases; f++) {{
        const int64_t phd = f / (sh * sw), phh = (f / sw) % sh, phw = f % sw;
        const int64_t sd0 = base1[0] + phd, sh0 = base1[1] + phh, sw0 = base1[2] + phw;
        nt[f] = nt1[sd0] * nt1[sh0] * nt1[sw0];
        wbase[f] = wsum;
        const int64_t R = cg * nt[f];
        for (int64_t k = 0; k < K; k++) {{
            const int64_t g = k / kg;
            for (int64_t c = 0; c < cg; c++)
            for (int64_t ia = 0; ia < nt1[sd0]; ia++)
            for (int64_t ib = 0; ib < nt1[sh0]; ib++)
            for (int64_t ie = 0; ie < nt1[sw0]; ie++) {{
                const int64_t a = tap1[sd0 * stride1 + ia], b = tap1[sh0 * stride1 + ib], e = tap1[sw0 * stride1 + ie];
                wp[wsum + k * R + ((c * nt1[sd0] + ia) * nt1[sh0] + ib) * nt1[sw0] + ie] =
                    w[((((g * cg + c) * kg + (k - g * kg)) * kd + a) * kh + b) * kw + e];
            }}
        }}
        wsum += K * R;
        const int64_t ph[3] = {{phd, phh, phw}};
        int64_t cells = 1;
        for (int dim = 0; dim < 3; dim++) {{
            q[dim * phases + f] = os[dim] > ph[dim] ? (os[dim] - ph[dim] + ss[dim] - 1) / ss[dim] : 0;
            cells *= q[dim * phases + f];
        }}
        pbase[f] = panels;
        panels += (cells + KF_NR - 1) / KF_NR;
    }}
    const int64_t work = N * K * P * cg * kd * kh * kw / phases;
    #pragma omp parallel if(work > {par_min})
    {{
        float* bp = (float*)malloc(sizeof(float) * (size_t)(cg * kd * kh * kw * KF_NR + 1));
        float tile[KF_MR * KF_NR];
        int64_t sj[KF_NR], sd_[KF_NR], sh_[KF_NR], sw_[KF_NR], sl[KF_NR], pos[KF_NR];
        #pragma omp for collapse(3) {schedule}
        for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < groups; g++)
        for (int64_t gp = 0; gp < panels; gp++) {{
            int64_t f = 0;
            while (f + 1 < phases && pbase[f + 1] <= gp) f++;
            const int64_t phd = f / (sh * sw), phh = (f / sw) % sh, phw = f % sw;
            const int64_t sd0 = base1[0] + phd, sh0 = base1[1] + phh, sw0 = base1[2] + phw;
            const int64_t Qd = q[f], Qh = q[phases + f], Qw = q[2 * phases + f], cells = Qd * Qh * Qw;
            const int64_t p0 = (gp - pbase[f]) * KF_NR, nj = cells - p0 < KF_NR ? cells - p0 : KF_NR;
            const int64_t R = cg * nt[f];
            /* the panel's positions in the phase's grid as runs along its rows; pos: their output position */
            int64_t ns = 0;
            for (int64_t j = 0; j < nj; ns++) {{
                const int64_t p = p0 + j, qw0 = p % Qw;
                sj[ns] = j; sd_[ns] = p / (Qw * Qh); sh_[ns] = (p / Qw) % Qh; sw_[ns] = qw0;
                sl[ns] = Qw - qw0 < nj - j ? Qw - qw0 : nj - j;
                for (int64_t jj = 0; jj < sl[ns]; jj++)
                    pos[j + jj] = ((sd_[ns] * sd + phd) * OH + sh_[ns] * sh + phh) * OW + (qw0 + jj) * sw + phw;
                j += sl[ns];
            }}
            for (int64_t c = 0; c < cg; c++) {{
                const float* xc = x + (n * C + g * cg + c) * D * H * W;
                for (int64_t ia = 0; ia < nt1[sd0]; ia++)
                for (int64_t ib = 0; ib < nt1[sh0]; ib++)
                for (int64_t ie = 0; ie < nt1[sw0]; ie++) {{
                    const int64_t od_ = off1[sd0 * stride1 + ia], oh_ = off1[sh0 * stride1 + ib];
                    const int64_t off = off1[sw0 * stride1 + ie];
                    float* dst = bp + (((c * nt1[sd0] + ia) * nt1[sh0] + ib) * nt1[sw0] + ie) * KF_NR;
                    for (int64_t s = 0; s < ns; s++) {{
                        const int64_t id = sd_[s] + od_, ih = sh_[s] + oh_, qw0 = sw_[s], len = sl[s];
                        float* dj = dst + sj[s];
                        if (id < 0 || id >= D || ih < 0 || ih >= H) {{
                            for (int64_t jj = 0; jj < len; jj++) dj[jj] = 0.0f;
                            continue;
                        }}
                        const float* xr = xc + (id * H + ih) * W;
                        int64_t lo = -off - qw0, hi = W - off - qw0;
                        lo = lo < 0 ? 0 : lo; hi = hi > len ? len : hi;
                        if (lo > len) lo = len;
                        if (hi < lo) hi = lo;
                        for (int64_t jj = 0; jj < lo; jj++) dj[jj] = 0.0f;
                        {simd}
                        for (int64_t jj = lo; jj < hi; jj++) dj[jj] = xr[qw0 + jj + off];
                        for (int64_t jj = hi; jj < len; jj++) dj[jj] = 0.0f;
                    }}
                    for (int64_t j = nj; j < KF_NR; j++) dst[j] = 0.0f;
                }}
            }}
            for (int64_t m0 = 0; m0 < kg; m0 += KF_MR) {{
                const float* a_rows[KF_MR];
                for (int r = 0; r < KF_MR; r++) a_rows[r] = wp + wbase[f] + (g * kg + (m0 + r < kg ? m0 + r : kg - 1)) * R;
                kf_micro(R, a_rows, 1, bp, tile);
                const int64_t mr = kg - m0 < KF_MR ? kg - m0 : KF_MR;
                for (int64_t r = 0; r < mr; r++) {{
                    const int64_t k = g * kg + m0 + r, row = n * K + k;
                    float* yr = y + row * P;
                    const float* tr = tile + r * KF_NR;
                    for (int64_t j = 0; j < nj; j++) {{
                        const int64_t p = pos[j];
                        const float acc = tr[j]{bias};
{epilogue}
                        yr[p] = {result};
                    }}
                }}
            }}
        }}
        free(bp);
    }}
    free(nt1); free(tap1); free(off1); free(nt); free(wp);
}}'''


def kernel(transposed: bool, **fields: str) -> str:
    """The C function, ``fields`` filling the kernel's other slots."""
    if transposed:
        return TRANSPOSED.format(**fields)
    cols = FORWARD_COLS.replace("{simd}", fields["simd"])
    return KERNEL.format(row=FORWARD_ROW.replace("{{", "{").replace("}}", "}"),
                         cols=cols.replace("{{", "{").replace("}}", "}"), **fields)
