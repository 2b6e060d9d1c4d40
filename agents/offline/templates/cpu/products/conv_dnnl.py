"""The oneDNN convolution kernel in C: forward and transposed, 1-3-D, any stride,
padding, dilation, groups and output padding, read at run time.

Per call the kernel describes the convolution to oneDNN (its C API, Debian's
libdnnl), lets the library choose its implementation, runs it, and frees what it
made; oneDNN's primitive cache keeps the JIT-compiled code between calls, never
data. Two layouts (``layout``):

* ``any``: the library picks its blocked layouts (nChw8c on AVX2, nChw16c or NHWC
  on AVX-512); the input and weight are reordered to them, the output is read
  back to NC[D]HW by our own pass that also adds the bias and the epilogue
  (GATHER: one pass where the library's reorder and our epilogue took two;
  level2/69 at 0.05 GB: 10.8 -> 7.5 ms) -- eager PyTorch reorders both ways.
  The batch runs in chunks of samples whose blocked output takes ~2 MB: the
  chunk is still in cache when our pass reads it, and the blocked rooms are
  small and reused instead of fresh pages the size of the output (level2/65's
  convolution at 0.05 GB: 54 -> 37 ms, half of it page faults before);
* ``plain``: the convolution runs on the tensors as they lie (NC[D]HW, torch's
  weight order), no reorders -- faster where the reorders cost more than the
  blocked kernel saves (1x1 convolutions, few channels), much slower elsewhere.

A forward convolution's bias goes to oneDNN, a transposed one's to the epilogue
(``bias_in_library``); the matched epilogue runs after the library in one parallel
pass over the output (the same pass as the BLAS algorithm's). The spatial rank is the
module's (a 2-D convolution stays 2-D: oneDNN's 3-D kernels are slower), the
3-D dims the host passes are read from their last ``nd`` entries.
"""

from __future__ import annotations

# torch's weight orders as oneDNN tags: a convolution's (K, C/g, k...) is o,i,k... (grouped:
# g,o,i,k...); a transposed one's (C, K/g, k...) is i,o,k... (grouped: g,i,o,k...)
KERNEL = '''/* {what}
   x: (N, C, D, H, W), w: {wshape}, y: (N, K, OD, OH, OW), all contiguous; absent
   leading spatial dims have size 1. Returns 0, or oneDNN's status when it refused.{docs} */
int {fn}({args}) {{
    const int ns = {nd}, off = 3 - {nd}, nd = 2 + {nd};
    const int64_t in3[3] = {{D, H, W}}, out3[3] = {{OD, OH, OW}}, k3[3] = {{kd, kh, kw}};
    const int64_t s3[3] = {{sd, sh, sw}}, p3[3] = {{pd, ph, pw}}, d3[3] = {{dd, dh, dw}};
    dnnl_dims_t sdims = {{N, C}}, ddims = {{N, K}}, wdims, bdims = {{K}}, st, dl, pl, pr;
    for (int i = 0; i < ns; i++) {{
        const int64_t j = off + i, span = (k3[j] - 1) * d3[j] + 1;
        sdims[2 + i] = in3[j]; ddims[2 + i] = out3[j]; st[i] = s3[j]; dl[i] = d3[j] - 1; pl[i] = p3[j];
        /* the right padding that gives torch's output size (output padding included) */
        pr[i] = {transposed} ? (in3[j] - 1) * s3[j] + span - p3[j] - out3[j] : (out3[j] - 1) * s3[j] + span - in3[j] - p3[j];
    }}
    const dnnl_format_tag_t plain[6] = {{dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde, dnnl_abcdef}};
    const dnnl_format_tag_t swapped[6] = {{dnnl_a, dnnl_ba, dnnl_bac, dnnl_bacd, dnnl_bacde, dnnl_a}};
    const dnnl_format_tag_t gswapped[7] = {{dnnl_a, dnnl_ab, dnnl_acb, dnnl_acbd, dnnl_acbde, dnnl_acbdef, dnnl_a}};
    int wn = nd;
    dnnl_format_tag_t wtag;
    if (groups > 1) {{
        wn = nd + 1;
        wdims[0] = groups; wdims[1] = K / groups; wdims[2] = C / groups;
        for (int i = 0; i < ns; i++) wdims[3 + i] = k3[off + i];
        wtag = {transposed} ? gswapped[wn - 1] : plain[wn - 1];
    }} else {{
        wdims[0] = K; wdims[1] = C;
        for (int i = 0; i < ns; i++) wdims[2 + i] = k3[off + i];
        wtag = {transposed} ? swapped[wn - 1] : plain[wn - 1];
    }}
    /* samples per chunk: the library's output of one chunk (at most ~2 MB) is still in cache when
       our pass reads it back, and its rooms are reused by every chunk instead of being fresh pages
       the size of the whole output; the plain layout has no rooms and runs the batch at once */
    const int64_t per = K * out3[0] * out3[1] * out3[2] * 4, cap = {layout_any} ? (2 << 20) / (per ? per : 1) : N;
    int64_t mb = 1;
    for (int64_t q = cap < N ? cap : N; q > 1; q--) if (N % q == 0) {{ mb = q; break; }}
    sdims[0] = mb; ddims[0] = mb;
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    dnnl_status_t rc = dnnl_engine_create(&eng, dnnl_cpu, 0);
    if (rc != dnnl_success) return (int)rc;
    rc = dnnl_stream_create(&strm, eng, dnnl_stream_default_flags);
    if (rc != dnnl_success) {{ dnnl_engine_destroy(eng); return (int)rc; }}
    dnnl_memory_desc_t us, uw, ub, ud, cs, cw, cd;
    const dnnl_format_tag_t pick = {layout_any} ? dnnl_format_tag_any : plain[nd - 1];
    dnnl_memory_desc_init_by_tag(&us, nd, sdims, dnnl_f32, plain[nd - 1]);
    dnnl_memory_desc_init_by_tag(&uw, wn, wdims, dnnl_f32, wtag);
    dnnl_memory_desc_init_by_tag(&ub, 1, bdims, dnnl_f32, dnnl_a);
    dnnl_memory_desc_init_by_tag(&ud, nd, ddims, dnnl_f32, plain[nd - 1]);
    dnnl_memory_desc_init_by_tag(&cs, nd, sdims, dnnl_f32, pick);
    dnnl_memory_desc_init_by_tag(&cw, wn, wdims, dnnl_f32, {layout_any} ? dnnl_format_tag_any : wtag);
    dnnl_memory_desc_init_by_tag(&cd, nd, ddims, dnnl_f32, pick);
    dnnl_primitive_desc_t cpd = NULL;
    {{
{describe}
    }}
    if (rc != dnnl_success) {{ dnnl_stream_destroy(strm); dnnl_engine_destroy(eng); return (int)rc; }}
    const dnnl_memory_desc_t* qs = dnnl_primitive_desc_query_md(cpd, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t* qw = dnnl_primitive_desc_query_md(cpd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t* qd = dnnl_primitive_desc_query_md(cpd, dnnl_query_dst_md, 0);
    const int rs = !dnnl_memory_desc_equal(qs, &us), rw = !dnnl_memory_desc_equal(qw, &uw);
    const int rd = !dnnl_memory_desc_equal(qd, &ud);
    kf_layout lay;
    const int gathered = rd && kf_channel_layout(qd, nd, &lay);
    dnnl_memory_t ms = NULL, mw = NULL, mb_ = NULL, md = NULL, bs = NULL, bw = NULL, bd = NULL;
    dnnl_primitive_t conv = NULL, into = NULL, back = NULL;
    rc = dnnl_memory_create(&ms, &us, eng, (void*)x);
    if (rc == dnnl_success) rc = dnnl_memory_create(&mw, &uw, eng, (void*)w);
    if (rc == dnnl_success) rc = dnnl_memory_create(&md, &ud, eng, y);
    if (rc == dnnl_success && {has_bias}) rc = dnnl_memory_create(&mb_, &ub, eng, (void*){bias});
    if (rc == dnnl_success) rc = rs ? dnnl_memory_create(&bs, qs, eng, DNNL_MEMORY_ALLOCATE) : dnnl_success;
    if (rc == dnnl_success) rc = rw ? dnnl_memory_create(&bw, qw, eng, DNNL_MEMORY_ALLOCATE) : dnnl_success;
    if (rc == dnnl_success) rc = rd ? dnnl_memory_create(&bd, qd, eng, DNNL_MEMORY_ALLOCATE) : dnnl_success;
    if (rc == dnnl_success && rw) rc = kf_dnnl_reorder(eng, strm, mw, &uw, bw, qw);
    if (rc == dnnl_success && rs) rc = kf_dnnl_reorder_make(eng, &us, qs, &into);
    if (rc == dnnl_success && rd && !gathered) rc = kf_dnnl_reorder_make(eng, qd, &ud, &back);
    if (rc == dnnl_success) rc = dnnl_primitive_create(&conv, cpd);
    void* handle = NULL;
    if (rc == dnnl_success && gathered) rc = dnnl_memory_get_data_handle(bd, &handle);
    const float* src = (const float*)handle;
    const int64_t P = OD * OH * OW, tiles = (P + 255) / 256, xs = C * D * H * W;
    for (int64_t n0 = 0; rc == dnnl_success && n0 < N; n0 += mb) {{
        rc = dnnl_memory_set_data_handle(ms, (void*)(x + n0 * xs));
        if (rc == dnnl_success) rc = dnnl_memory_set_data_handle(md, y + n0 * K * P);
        if (rc == dnnl_success && rs) {{
            dnnl_exec_arg_t a[2] = {{{{DNNL_ARG_FROM, ms}}, {{DNNL_ARG_TO, bs}}}};
            rc = dnnl_primitive_execute(into, strm, 2, a);
        }}
        if (rc == dnnl_success) {{
            dnnl_exec_arg_t args[4] = {{{{DNNL_ARG_SRC, rs ? bs : ms}}, {{DNNL_ARG_WEIGHTS, rw ? bw : mw}},
                                       {{DNNL_ARG_DST, rd ? bd : md}}, {{DNNL_ARG_BIAS, mb_}}}};
            rc = dnnl_primitive_execute(conv, strm, {has_bias} ? 4 : 3, args);
        }}
        if (rc == dnnl_success && back) {{
            dnnl_exec_arg_t a[2] = {{{{DNNL_ARG_FROM, bd}}, {{DNNL_ARG_TO, md}}}};
            rc = dnnl_primitive_execute(back, strm, 2, a);
        }}
        if (rc == dnnl_success) rc = dnnl_stream_wait(strm);
        if (rc == dnnl_success && gathered) {{
            /* this chunk's output as oneDNN laid it out, read once: bias and epilogue applied, written plain */
{gather}        }}
    }}
    dnnl_primitive_t prims[3] = {{conv, into, back}};
    for (int i = 0; i < 3; i++) if (prims[i]) dnnl_primitive_destroy(prims[i]);
    dnnl_memory_t made[7] = {{ms, mw, mb_, md, bs, bw, bd}};
    for (int i = 0; i < 7; i++) if (made[i]) dnnl_memory_destroy(made[i]);
    dnnl_primitive_desc_destroy(cpd);
    dnnl_stream_destroy(strm);
    dnnl_engine_destroy(eng);
    if (rc != dnnl_success) return (int)rc;
    if (gathered) return 0;
{finish}    return 0;
}}'''

# a reorder between two layouts of the same tensor: made once per call (the input's, run per chunk),
# or made and run at once (the weights')
REORDER = '''static dnnl_status_t kf_dnnl_reorder_make(dnnl_engine_t eng, const dnnl_memory_desc_t* from_md,
                                          const dnnl_memory_desc_t* to_md, dnnl_primitive_t* r) {
    dnnl_primitive_desc_t rpd;
    dnnl_status_t rc = dnnl_reorder_primitive_desc_create(&rpd, from_md, eng, to_md, eng, NULL);
    if (rc != dnnl_success) return rc;
    rc = dnnl_primitive_create(r, rpd);
    dnnl_primitive_desc_destroy(rpd);
    return rc;
}

static dnnl_status_t kf_dnnl_reorder(dnnl_engine_t eng, dnnl_stream_t strm, dnnl_memory_t from,
                                     const dnnl_memory_desc_t* from_md, dnnl_memory_t to, const dnnl_memory_desc_t* to_md) {
    dnnl_primitive_t r;
    dnnl_status_t rc = kf_dnnl_reorder_make(eng, from_md, to_md, &r);
    if (rc != dnnl_success) return rc;
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    rc = dnnl_primitive_execute(r, strm, 2, args);
    dnnl_primitive_destroy(r);
    return rc;
}'''

# a layout of the convolution's output that one pass of ours reads in place of oneDNN's reorder back
# to NC[D]HW: channels blocked by cb (nChw8c / nChw16c) or not (NHWC), dense spatial dims in order;
# element (n, k, pixel p) lies at n * sn + (k / cb) * sk + k % cb + p * sp
LAYOUT = '''typedef struct { int64_t sn, sk, sp, cb; } kf_layout;

static int kf_channel_layout(const dnnl_memory_desc_t* md, int nd, kf_layout* out) {
    if (md->format_kind != dnnl_blocked || md->offset0 != 0 || md->data_type != dnnl_f32) return 0;
    const dnnl_blocking_desc_t* b = &md->format_desc.blocking;
    int64_t cb = 1;
    if (b->inner_nblks == 1 && b->inner_idxs[0] == 1) cb = b->inner_blks[0];
    else if (b->inner_nblks != 0) return 0;
    if (md->padded_dims[0] != md->dims[0]) return 0;
    for (int i = 2; i < nd; i++) {
        if (md->padded_dims[i] != md->dims[i]) return 0;
        if (i + 1 < nd && b->strides[i] != b->strides[i + 1] * md->dims[i + 1]) return 0;
    }
    out->sn = b->strides[0]; out->sk = b->strides[1]; out->sp = b->strides[nd - 1]; out->cb = cb;
    return 1;
}'''

# that pass: tiles of 256 output pixels of one sample, every channel of the tile in turn (the
# tile's part of the blocked output stays in cache while its channels are written out)
GATHER = '''            #pragma omp parallel for {schedule} if(mb * K * P >= {par_min})
            for (int64_t job = 0; job < mb * tiles; job++) {{
                const int64_t n = job / tiles, p0 = (job % tiles) * 256, p1 = p0 + 256 < P ? p0 + 256 : P;
                for (int64_t k = 0; k < K; k++) {{
                    const int64_t row = (n0 + n) * K + k;
                    const float* sr = src + n * lay.sn + (k / lay.cb) * lay.sk + k % lay.cb;
                    float* yr = y + row * P;
                    const int64_t sp = lay.sp;
                    for (int64_t p = p0; p < p1; p++) {{
                        const float acc = sr[p * sp]{bias};
{epilogue}
                        yr[p] = {result};
                    }}
                }}
            }}
'''

FORWARD = '''        dnnl_convolution_desc_t desc;
        rc = dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct, &cs, &cw,
                                                        {has_bias} ? &ub : NULL, &cd, st, dl, pl, pr);
        if (rc == dnnl_success) rc = dnnl_primitive_desc_create(&cpd, &desc, NULL, eng, NULL);'''
TRANSPOSED = '''        dnnl_deconvolution_desc_t desc;
        rc = dnnl_dilated_deconvolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_deconvolution_direct, &cs,
                                                          &cw, {has_bias} ? &ub : NULL, &cd, st, dl, pl, pr);
        if (rc == dnnl_success) rc = dnnl_primitive_desc_create(&cpd, &desc, NULL, eng, NULL);'''

def bias_in_library(spec: dict) -> bool:
    """Whether oneDNN adds the bias. Not for a transposed convolution: Debian's oneDNN 2.6 adds a
    deconvolution's bias in a loop of plain C++ after its JIT kernel (level2/93 at 0.05 GB: 12.3 ms
    with it, 6.9 ms with the bias in our epilogue pass); a forward convolution's JIT kernel adds it
    in place."""
    return spec["bias"] is not None and not spec["transposed"]


HOST_CALL = '''{prep}    rc = lib.{fn}(x, w, {ptrs}y, {operands}N, C, *pad3(x.shape[2:], 1), K, *pad3(out_sp, 1),
       *pad3(w.shape[2:], 1), *pad3(stride, 1), *pad3(padding, 0), *pad3(dilation, 1), groups{scalars})
    if rc:
        raise RuntimeError(f"oneDNN refused this convolution (dnnl_status_t {{rc}})")
    return y
'''


def kernel(spec: dict, fn: str, what: str, args: str, docs: str, layout: str, finish: str, gather: str) -> str:
    """``finish``: the pass over the plain output after the library (empty: none), adding the bias
    of a transposed convolution itself (``bias_in_library``); ``gather``: the same work done while
    reading a blocked output back (GATHER), in place of the library's reorder."""
    has_bias = "1" if bias_in_library(spec) else "0"
    describe = (TRANSPOSED if spec["transposed"] else FORWARD).format(has_bias=has_bias)
    return "\n\n".join([REORDER, LAYOUT, KERNEL.format(
        what=what, fn=fn, args=args, docs=docs, nd=int(spec["nd"]), transposed=int(bool(spec["transposed"])),
        wshape="(C, K / groups, kd, kh, kw)" if spec["transposed"] else "(K, C / groups, kd, kh, kw)",
        layout_any=int(layout == "any"), has_bias=has_bias, bias="bias" if spec["bias"] is not None else "NULL",
        describe=describe, finish=finish, gather=gather)])
