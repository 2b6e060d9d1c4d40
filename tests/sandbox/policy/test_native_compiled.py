"""The native source policy on what compiles (real gcc, no mocks): every way of
hiding a name, a header, state or a clock read from the text rules is caught
by the facts of the build (preprocessed user tokens, direct includes, the
object's undefined symbols, writable data and instructions), and honest
kernels pass both layers."""

from __future__ import annotations

import tempfile

import pytest

from sandbox.native_sources import NativeSource
from sandbox.policy import native as policy_native
from sandbox.policy import symbols as native_inspect
from sandbox.runner.native import library as native

S = "\\\n"  # a backslash-newline splice


def judged(text: str, lang: str = "c") -> tuple[list[str], list[str]]:
    """(text-rule findings, findings on what compiled)."""
    src = NativeSource(lang=lang, text=text, name="k", line=1, text_line=1)
    _, facts = native.build_inspected(text, lang, "k", cache_dir=tempfile.mkdtemp(prefix="kforge-policy-"))
    return policy_native.check_source(src, "c.py"), native_inspect.check_facts(src, facts, "c.py")


KERNEL = "void f(const float* x, float* y, int64_t n) {{\n{body}\n}}\n"
LOOP = "    for (int64_t i = 0; i < n; i++) y[i] = x[i] * 2.0f;"


def kernel(body: str, head: str = "", includes: str = "#include <stdint.h>\n") -> str:
    return includes + head + KERNEL.format(body=body)


# name -> (source, a phrase the findings on what compiled must contain)
CHEATS: dict[str, tuple[str, str]] = {
    "splice_static_cache": (kernel("    if (n == last_n) { for (int64_t i = 0; i < n; i++) y[i] = memo[i]; return; }\n"
                                   + LOOP + "\n    for (int64_t i = 0; i < n && i < 4096; i++) memo[i] = y[i];"
                                   "\n    last_n = n;",
                                   f"sta{S}tic float memo[4096];\nsta{S}tic int64_t last_n;\n"), "mutable state"),
    "splice_fopen": (kernel(f"    void* h = fo{S}pen(\"/tmp/c\", \"r\");\n    if (h) return;\n" + LOOP,
                            f"void* fo{S}pen(const char*, const char*);\n"), "calls fopen"),
    "splice_omp_set_num_threads": (kernel(f"    omp_set_num_{S}threads(64);\n" + LOOP,
                                          includes="#include <stdint.h>\n#include <omp.h>\n"), "omp_set_num_threads"),
    "splice_constructor": (kernel(LOOP, f"__attribute__((con{S}structor)) static void early(void) {{ }}\n"),
                           "constructor"),
    "splice_asm_rdtsc": (kernel(f"    unsigned lo, hi;\n    __as{S}m__ volatile(\"rdtsc\" : \"=a\"(lo), \"=d\"(hi));\n"
                                "    if (lo & 1) return;\n" + LOOP), "rdtsc"),
    "digraph_include_stdio": (kernel(LOOP, includes="#include <stdint.h>\n%:include <stdio.h>\n"), "<stdio.h>"),
    "digraph_include_time": (kernel(LOOP, includes="#include <stdint.h>\n%:  include <sys/time.h>\n"), "sys/time.h"),
    "digraph_define_open": (kernel("    if (OPEN(\"c\", \"r\")) return;\n" + LOOP,
                                   "%:define OPEN fo\\\npen\nvoid* fopen(const char*, const char*);\n"), "fopen"),
    "macro_named_getenv": (kernel("    if (ENV(\"KFORGE\")) return;\n" + LOOP,
                                  "#define ENV ge\\\ntenv\nchar* getenv(const char*);\n"), "getenv"),
    "attribute_by_macro": (kernel(LOOP, "#define ATTR __attribute__\nATTR((destructor)) static void late(void) { }\n"),
                           "destructor"),
    "static_by_macro_in_function": (kernel("    KEEP int calls;\n    calls++;\n    if (calls > 3) return;\n" + LOOP,
                                           "#define KEEP static\n"), "mutable state"),
    "mutable_pointer_to_const": (kernel("    if (x == seen) return;\n    seen = x;\n" + LOOP,
                                        "static const float *seen;\n"), "mutable state"),
    "function_static_counter": (kernel("    static long calls = 0;\n    if (++calls > 2) return;\n" + LOOP),
                                "mutable state"),
    "volatile_global": (kernel("    if (flag) return;\n    flag = 1;\n" + LOOP, "volatile int flag;\n"),
                        "mutable state"),
    "thread_local_by_splice": (kernel("    if (done) return;\n    done = 1;\n" + LOOP, f"_Thread_lo{S}cal int done;\n"),
                               "mutable state"),
    "asm_rdtsc_by_macro": (kernel("    unsigned lo, hi;\n    TICK(lo, hi);\n    if (lo & 1) return;\n" + LOOP,
                                  f"#define TICK(a, b) __a{S}sm__ volatile(\"rdtsc\" : \"=a\"(a), \"=d\"(b))\n"),
                           "rdtsc"),
    "asm_syscall_by_macro": (kernel("    long r;\n    SYS(r);\n    if (r) return;\n" + LOOP,
                                    f"#define SYS(r) as{S}m volatile(\"syscall\" : \"=a\"(r) : \"a\"(39))\n"),
                             "syscall"),
    "builtin_ia32_rdtsc": (kernel("    if (__builtin_ia32_rdtsc() & 1) return;\n" + LOOP), "rdtsc"),
    "rdtsc_from_x86intrin": (kernel("    if (_rdtsc() & 1) return;\n" + LOOP,
                                    includes="#include <stdint.h>\n#include <x86intrin.h>\n"), "rdtsc"),
    "rdtscp_from_x86intrin": (kernel("    unsigned aux;\n    if (_rdtscp(&aux) & 1) return;\n" + LOOP,
                                     includes="#include <stdint.h>\n#include <x86intrin.h>\n"), "rdtscp"),
    "rdpid_intrinsic": (kernel("    if (_rdpid_u32() & 1) return;\n" + LOOP,
                               includes="#include <stdint.h>\n#include <immintrin.h>\n",
                               head='__attribute__((target("rdpid")))\n'), "rdpid"),
    "pragma_redefine_extname": (kernel("    if (myopen(\"c\", \"r\")) return;\n" + LOOP,
                                       "void* myopen(const char*, const char*);\n"
                                       f"_Pra{S}gma(\"redefine_extname myopen fopen\")\n"), "fopen"),
    "line_directive_digraph": (kernel(LOOP, "%:line 1 \"/usr/include/math.h\"\n"), "#line"),
    "forged_linemarker": (kernel("    if (fopen(\"c\", \"r\")) return;\n" + LOOP,
                                 "%: 1 \"/usr/include/math.h\" 1 3 4\nvoid* fopen(const char*, const char*);\n"
                                 "%: 4 \"k.c\" 2\n"), "fopen"),
    "weak_libc_data": (kernel("    if (__libc_enable_secure) return;\n" + LOOP,
                              "extern int __libc_enable_secure __attribute__((weak));\n"), "__libc_enable_secure"),
    "rand_state": (kernel("    if (rand() & 1) return;\n" + LOOP,
                          includes="#include <stdint.h>\n#include <stdlib.h>\n"), "calls rand"),
    "omp_wtime": (kernel("    if (omp_get_wtime() > 1.0) return;\n" + LOOP,
                         includes="#include <stdint.h>\n#include <omp.h>\n"), "omp_get_wtime"),
    "function_in_data_section": (kernel(LOOP, "#define AT __attribute__\nAT((section(\".data\"))) void g(void) { }\n"),
                                 "section"),
    "thread_control_block_via_segment": (kernel("    SEG int* slot = (SEG int*)0x50;\n    if (*slot == 7) return;\n"
                                                "    *slot = 7;\n" + LOOP, f"#define SEG __se{S}g_fs\n"), "%fs:0x50"),
    "cpp_getenv_by_using": ('#include <cstdint>\n#include <cstdlib>\nusing namespace std;\n#define E ge\\\ntenv\n'
                            'extern "C" void f(const float* x, float* y, int64_t n) {\n'
                            '    if (E("K")) return;\n' + LOOP + "\n}\n", "getenv"),
    "cpp_static_vector_cache": ('#include <cstdint>\n#include <vector>\n'
                                'extern "C" void f(const float* x, float* y, int64_t n) {\n'
                                '    sta\\\ntic std::vector<float> memo;\n'
                                '    if ((int64_t)memo.size() == n) { for (int64_t i = 0; i < n; i++) y[i] = memo[i]; '
                                'return; }\n' + LOOP + "\n    memo.assign(y, y + n);\n}\n", "mutable state"),
}


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_hidden_cheat_is_caught_on_what_compiled(name: str) -> None:
    text, phrase = CHEATS[name]
    lang = "c++" if name.startswith("cpp_") else "c"
    _, compiled = judged(text, lang)
    assert any(phrase in f for f in compiled), f"{name}: {compiled}"


@pytest.mark.parametrize("name", ["splice_static_cache", "digraph_include_stdio", "mutable_pointer_to_const",
                                  "splice_fopen", "line_directive_digraph"])
def test_text_rules_see_through_splices_and_digraphs(name: str) -> None:
    """The text rules keep their line numbers and now read splices and digraphs as the compiler does."""
    text, _ = CHEATS[name]
    found = policy_native.check_source(NativeSource("c", text, "k", 1, 1), "c.py")
    assert found and all(f.startswith("k.c:") for f in found), found


def test_findings_name_the_line() -> None:
    _, compiled = judged(CHEATS["static_by_macro_in_function"][0])
    assert any(f.startswith("k.c:4 (c.py:4): mutable state") and "calls" in f for f in compiled), compiled


def test_trigraphs_are_not_directives() -> None:
    """gnu11 ignores trigraphs: ??=include is no include, just a syntax error."""
    with pytest.raises(native.NativeBuildError):
        judged(kernel(LOOP, includes="#include <stdint.h>\n??=include <stdio.h>\n"))


HONEST: dict[str, tuple[str, str]] = {
    "openmp_constructs": ("c", """
#include <stdint.h>
#include <math.h>
#include <omp.h>
void f(const float* x, float* y, int64_t n) {
    float best = -INFINITY, total = 0.0f;
    #pragma omp parallel
    {
        float local = -INFINITY;
        #pragma omp for schedule(dynamic, 16) nowait
        for (int64_t i = 0; i < n; i++) local = fmaxf(local, x[i]);
        #pragma omp critical(maxlock)
        { if (local > best) best = local; }
        #pragma omp critical
        { total += local; }
        #pragma omp barrier
        #pragma omp single
        { y[0] = best; }
        #pragma omp atomic
        y[0] += 1.0f;
        #pragma omp task
        { y[0] += 0.0f; }
        #pragma omp taskwait
    }
    #pragma omp parallel for reduction(max:best) schedule(guided)
    for (int64_t i = 0; i < n; i++) best = fmaxf(best, x[i]);
    y[0] += best * 0.0f + total * 0.0f;
}
"""),
    "openmp_parallel_for_simd": ("c", """
#include <stdint.h>
#include <math.h>
#include <omp.h>
static inline float gelu(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678f)); }
void f(const float* x, float* y, int64_t rows, int64_t cols) {
    #pragma omp parallel for if (rows * cols > 4096) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        float acc = 0.0f;
        #pragma omp simd reduction(+:acc)
        for (int64_t c = 0; c < cols; c++) acc += expf(x[r * cols + c]) + tanhf(x[r * cols + c]);
        const float team = (float)(omp_get_thread_num() % omp_get_max_threads());
        #pragma GCC unroll 4
        for (int64_t c = 0; c < cols; c++) y[r * cols + c] = gelu(x[r * cols + c]) / acc + team;
        if (isnan(acc) || acc == INFINITY) y[r * cols] = NAN;
    }
}
"""),
    "avx2_intrinsics": ("c", """
#include <stdint.h>
#include <stddef.h>
#include <immintrin.h>
static const float table[] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f};
static const float *const rows[] = {table, table + 4};
void f(const float* x, float* y, int64_t n) {
    const __m256 t = _mm256_loadu_ps(table);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        v = _mm256_fmadd_ps(v, t, _mm256_set1_ps(1.0f));
        _mm256_storeu_ps(y + i, _mm256_max_ps(v, _mm256_setzero_ps()));
    }
    for (; i < n; i++) y[i] = x[i] * rows[i & 1][i & 3];
}
"""),
    "scratch_memory": ("c", """
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <assert.h>
#include <float.h>
void f(const float* x, float* y, int64_t n) {
    assert(n >= 0);
    float* tmp = (float*)aligned_alloc(64, (size_t)((n + 15) / 16 * 16) * sizeof(float) + 64);
    if (!tmp) return;
    memcpy(tmp, x, (size_t)n * sizeof(float));
    float m = -FLT_MAX;
    for (int64_t i = 0; i < n; i++) m = fmaxf(m, tmp[i]);
    memset(y, 0, (size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) y[i] = tmp[i] - m + (float)labs((long)i % 3);
    free(tmp);
}
""".replace("fmaxf", "__builtin_fmaxf")),
    "cpp_vector_algorithm": ("c++", """
#include <cstdint>
#include <vector>
#include <algorithm>
#include <numeric>
#include <cmath>
#include <array>
static inline float clampf(float v, float lo, float hi) { return std::min(std::max(v, lo), hi); }
extern "C" void f(const float* x, float* y, int64_t n) {
    std::vector<float> v(x, x + n);
    std::sort(v.begin(), v.end());
    const float med = n ? v[n / 2] : 0.0f;
    const float sum = std::accumulate(v.begin(), v.end(), 0.0f);
    std::array<float, 4> k{{0.5f, 1.0f, 1.5f, 2.0f}};
    #pragma omp parallel for
    for (int64_t i = 0; i < n; i++) y[i] = clampf(std::tanh(x[i] - med) * k[i & 3], -1.0f, 1.0f) + sum * 0.0f;
}
"""),
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_kernel_passes_both_layers(name: str) -> None:
    lang, text = HONEST[name]
    found, compiled = judged(text, lang)
    assert found == [] and compiled == [], (found, compiled)


def test_allowlist_of_symbols() -> None:
    ok = ["expf", "tanhf", "erff", "sqrt", "_ZGVdN8v_expf", "GOMP_parallel", "omp_get_thread_num", "memcpy",
          "aligned_alloc", "_Znwm", "_ZdlPvm", "_ZSt20__throw_length_errorPKc", "__stack_chk_fail", "__divti3",
          "cblas_sgemm", "cblas_dgemv", "cblas_sdot", "cblas_isamax", "dnnl_engine_create",
          "dnnl_dilated_convolution_forward_desc_init", "dnnl_primitive_execute", "dnnl_memory_create",
          "dnnl_post_ops_append_eltwise", "dnnl_sgemm"]
    bad = ["fopen", "getenv", "clock_gettime", "syscall", "dlopen", "pthread_create", "omp_set_num_threads",
           "omp_get_wtime", "omp_get_num_procs", "rand", "__cxa_atexit", "printf", "_ZSt4cout",
           "openblas_set_num_threads", "goto_set_num_threads", "cblas_xerbla", "openblas_get_num_procs",
           "dnnl_set_verbose", "dnnl_set_jit_dump", "dnnl_set_max_cpu_isa", "dnnl_set_primitive_cache_capacity",
           "dnnl_primitive_attr_set_fpmath_mode", "dnnl_set_default_fpmath_mode",
           "dnnl_primitive_create_from_cache_blob", "dnnl_threadpool_interop_stream_create"]
    assert [s for s in ok if not native_inspect.allowed_symbol(s)] == []
    assert [s for s in bad if native_inspect.allowed_symbol(s)] == []


def test_missing_or_stale_facts_reject() -> None:
    src = NativeSource("c", kernel(LOOP), "k", 1, 1)
    assert native_inspect.check_facts(src, None, "c.py")
    assert native_inspect.check_facts(src, {"v": -1}, "c.py")
