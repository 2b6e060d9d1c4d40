"""Native sources as the judge reads them: extraction from the candidate's
syntax tree (sandbox/native_sources.py) and the C/C++ source policy
(sandbox/policy/native.py). Honest kernels must pass untouched; each banned
construct must be named with its line in the C text and in the candidate."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sandbox import native_sources
from sandbox.policy import native as policy_native
from sandbox.policy import python as policy
from tests.sandbox.judge import fixture_catalog as fc

HEAD = "import torch\nfrom kforge_native import load_c, load_cpp\n"


def extract(code: str) -> native_sources.Extracted:
    return native_sources.extract(ast.parse(code), "cand.py")


def c_findings(body: str, lang: str = "c") -> list[str]:
    return [f"{f.line}: {f.text}" for f in policy_native.check_text(body, lang)]


# --- extraction ---------------------------------------------------------------

def test_module_constant_and_direct_literal_are_extracted_with_their_lines() -> None:
    code = HEAD + 'SRC = r"""\nvoid f(float* y) { y[0] = 1; }\n"""\nlib = load_c(SRC, ["void f(float* y)"], name="k")\n' \
        'lib2 = load_cpp("extern \\"C\\" void g(float* y) {}", ["void g(float* y)"])\n'
    got = extract(code)
    assert got.findings == []
    assert [(s.lang, s.name, s.line, s.text_line) for s in got.sources] == [("c", "k", 6, 3), ("c++", "kernel", 7, 7)]
    assert got.sources[0].filename == "k.c" and got.sources[1].filename == "kernel.cpp"


@pytest.mark.parametrize("code, words", [
    ('SRC = "void f" + "(float* y) {}"\nlib = load_c(SRC, ["void f(float* y)"])\n', "computed"),
    ('SRC = "void f(float* y) {}"\nSRC = SRC.replace("f", "g")\nlib = load_c(SRC, ["void g(float* y)"])\n',
     "computed"),
    ('def make():\n    return "void f(float* y) {}"\nlib = load_c(make(), ["void f(float* y)"])\n', "computed"),
    ('lib = load_c(open("k.c").read(), ["void f(float* y)"])\n', "computed"),
    ('build = load_c\nlib = build("void f(float* y) {}", ["void f(float* y)"])\n', "other than as a direct call"),
    ('N = "k"\nlib = load_c("void f(float* y) {}", ["void f(float* y)"], name=N + "x")\n', "name"),
])
def test_sources_the_judge_cannot_read_are_findings(code: str, words: str) -> None:
    got = extract(HEAD + code)
    assert got.findings and words in got.findings[0] and got.findings[0].startswith("cand.py:")


def test_module_alias_is_followed() -> None:
    code = 'import kforge_native as kn\nlib = kn.load_c("void f(float* y) {}", ["void f(float* y)"])\n'
    got = extract(code)
    assert got.findings == [] and len(got.sources) == 1


def test_no_loader_no_sources() -> None:
    assert extract("import torch\nSRC = 'void f() {}'\n").sources == []


# --- the C policy: honest kernels ---------------------------------------------

HONEST_NATIVE = sorted(fc.HONEST.glob("*native*.py"))


@pytest.mark.parametrize("path", HONEST_NATIVE, ids=lambda p: p.stem)
def test_honest_fixture_kernels_have_no_findings(path: Path) -> None:
    text = path.read_text()
    tree = ast.parse(text)
    got = native_sources.extract(tree, path.name)
    assert got.sources and got.findings == []
    assert policy_native.check_sources(got.sources, path.name) == [[]]
    assert policy.findings(text, path.name, tree) == []


HONEST_C = {
    "elementwise": """
#include <stdint.h>
#include <math.h>
/* a comment naming fork() and "system" is not code */
void gelu(const float* restrict x, float* restrict y, int64_t n) {
    const float k = 0.7978845608f;  // sqrt(2/pi)
    #pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
    }
}
""",
    "matmul_avx": """
#include <stdint.h>
#include <stddef.h>
#include <immintrin.h>
#define MR 4
#define NR 8
static const float ZERO = 0.0f;
typedef struct { int64_t m, n; } tile_t;
static inline void micro(const float* a, const float* b, float* c, int64_t K, int64_t lda, int64_t ldb, int64_t ldc) {
    __m256 acc[MR];
    for (int r = 0; r < MR; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; k++) {
        __m256 bv = _mm256_loadu_ps(b + k * ldb);
        for (int r = 0; r < MR; r++) acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(a[r * lda + k]), bv, acc[r]);
    }
    for (int r = 0; r < MR; r++) _mm256_storeu_ps(c + r * ldc, _mm256_max_ps(acc[r], _mm256_set1_ps(ZERO)));
}
void matmul(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
    static const int64_t block = 64;
    #pragma omp parallel for collapse(2) schedule(static)
    for (int64_t i = 0; i < M; i += MR)
        for (int64_t j = 0; j < N; j += NR) {
            tile_t t = {i, j};
            (void)block;
            micro(a + t.m * K, b + t.n, c + t.m * N + t.n, K, K, N, N);
        }
}
""",
    "softmax_cpp": """
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <array>
namespace kf {
template <typename T> inline T clamp0(T v) { return std::max(v, T(0)); }
struct Stats { float max; float sum; };
}
extern "C" {
void softmax(const float* x, float* y, int64_t rows, int64_t cols) {
    #pragma omp parallel for
    for (int64_t r = 0; r < rows; r++) {
        kf::Stats s{-INFINITY, 0.0f};
        for (int64_t c = 0; c < cols; c++) s.max = std::max(s.max, x[r * cols + c]);
        for (int64_t c = 0; c < cols; c++) { y[r * cols + c] = std::exp(x[r * cols + c] - s.max); s.sum += y[r * cols + c]; }
        for (int64_t c = 0; c < cols; c++) y[r * cols + c] = kf::clamp0(y[r * cols + c] / s.sum);
    }
}
}
""",
    "scratch_malloc": """
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
void f(const float* x, float* y, int64_t n, int64_t read, int64_t time) {
    float* tmp = (float*)malloc((size_t)n * sizeof(float));
    memcpy(tmp, x, (size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) y[i] = tmp[i] * 2.0f + (float)(read + time);
    free(tmp);
}
""",
}


@pytest.mark.parametrize("name", list(HONEST_C))
def test_honest_kernels_have_no_findings(name: str) -> None:
    assert c_findings(HONEST_C[name], "c++" if name.endswith("cpp") else "c") == []


# --- the C policy: what it forbids ---------------------------------------------

FN = "void f(float* y, long n) {{\n    {}\n}}\n"


@pytest.mark.parametrize("body, words", [
    ("fork();", "uses fork"),
    ("execve(0, 0, 0);", "uses execve"),
    ("system(\"ls\");", "uses system"),
    ("syscall(39);", "uses syscall"),
    ("pthread_t t; pthread_create(&t, 0, 0, 0);", "starts threads"),
    ("kill(1, 9);", "signals"),
    ("exit(0);", "uses exit"),
    ("abort();", "uses abort"),
    ("atexit(0);", "uses atexit"),
    ("signal(11, 0);", "uses signal"),
    ("int fd = open(\"/etc/passwd\", 0);", "uses open"),
    ("void* p = fopen(\"x\", \"r\");", "uses fopen"),
    ("int s = socket(2, 1, 0);", "network"),
    ("void* h = dlopen(\"libc.so.6\", 2);", "loads code"),
    ("void* s = dlsym(0, \"system\");", "loads code"),
    ("char* e = getenv(\"HOME\");", "environment"),
    ("extern char** environ; y[0] = environ != 0;", "environment"),
    ("__asm__ volatile(\"nop\");", "inline assembly"),
    ("asm(\"syscall\");", "inline assembly"),
    ("static float cache[64]; y[0] = cache[0];", "static variable"),
    ("static int calls = 0; calls++;", "static variable"),
    ("unsigned long long t = __rdtsc();", "clock"),
    ("double t = omp_get_wtime();", "clock"),
    ("omp_set_num_threads(64);", "threads"),
    ("void* f = __builtin_frame_address(0);", "stack"),
    ("_Pragma(\"GCC dependency \\\"x\\\"\")", "_Pragma"),
    ("void* m = mmap(0, 4096, 7, 34, -1, 0);", "maps"),
    ("PyObject* o = 0;", "Python"),
])
def test_banned_calls_and_constructs_are_named_with_their_line(body: str, words: str) -> None:
    found = c_findings("#include <stdint.h>\n" + FN.format(body))
    assert any(f.startswith("3: ") and words.lower() in f.lower() for f in found), found


@pytest.mark.parametrize("source, line, words", [
    ("#include <stdio.h>\nvoid f(void) {}\n", 1, "not an allowed header"),
    ("#include <unistd.h>\n", 1, "not an allowed header"),
    ("#include \"/etc/passwd\"\n", 1, "not an allowed header"),
    ("#define H <stdio.h>\n#include H\n", 2, "computed name"),
    ("#include <thread>\n", 1, "not an allowed header"),
    ("#define CAT(a, b) a##b\nvoid f(void) { CAT(fo, rk)(); }\n", 1, "token pasting"),
    ("#pragma GCC dependency \"/etc/shadow\"\n", 1, "only OpenMP"),
    ("#line 1 \"other.c\"\n", 1, "directive not allowed"),
    ("#include_next <math.h>\n", 1, "directive not allowed"),
    ("__attribute__((constructor)) void init(void) {}\n", 1, "constructor"),
    ("void fin(void) __attribute__((destructor));\nvoid fin(void) {}\n", 1, "destructor"),
    ("void g(void) __attribute__((alias(\"f\")));\n", 1, "alias"),
    ("float results[1024];\nvoid f(void) {}\n", 1, "file-scope variable"),
    ("static double last_sum;\n", 1, "file-scope variable"),
    ("struct cache { float v[8]; } kept;\n", 1, "file-scope variable"),
    ("_Thread_local int tls;\n", 1, "_Thread_local"),
    ("int fork(void);\nvoid f(void) { }\n", 1, "does not define"),
    ("extern int errno_copy;\n", 1, "extern declaration"),
    ("#include <cstdint>\nvoid f() { std::thread t([]{}); t.detach(); }\n", 2, "std::thread"),
    ("#include <cstdlib>\nextern \"C\" void f() { std::exit(0); }\n", 2, "std::exit"),
    ("#include <cstdlib>\nextern \"C\" void f() { const char* h = std::getenv(\"HOME\"); (void)h; }\n", 2,
     "std::getenv"),
])
def test_file_level_rules(source: str, line: int, words: str) -> None:
    found = c_findings(source, "c++" if "std::" in source or "<thread>" in source else "c")
    assert any(f.startswith(f"{line}: ") and words.lower() in f.lower() for f in found), found


def test_const_tables_and_own_prototypes_are_allowed() -> None:
    source = """
#include <stdint.h>
static const float LUT[4] = {0.0f, 1.0f, 2.0f, 3.0f};
const int64_t BLOCK = 64;
enum { WIDTH = 8 };
static void helper(float* y, int64_t n);
void f(float* y, int64_t n) { helper(y, n); y[0] += LUT[1] + (float)BLOCK + WIDTH; }
static void helper(float* y, int64_t n) { for (int64_t i = 0; i < n; i++) y[i] = 0.0f; }
"""
    assert c_findings(source) == []


def test_findings_name_c_line_and_candidate_line() -> None:
    code = HEAD + 'SRC = r"""\n#include <stdint.h>\nvoid f(float* y) {\n    fork();\n}\n"""\n' \
        'lib = load_c(SRC, ["void f(float* y)"], name="evil")\n'
    got = extract(code)
    (found,) = policy_native.check_sources(got.sources, "cand.py")
    assert found and found[0].startswith("evil.c:4 (cand.py:6): uses fork"), found
    assert code.splitlines()[5].strip() == "fork();"


def test_loader_internals_are_policy_findings() -> None:
    code = HEAD + 'lib = load_c("void f(float* y) {}", ["void f(float* y)"])\nraw = lib.f._invoke\nt = lib._functions\n'
    found = policy.findings(code, "cand.py")
    assert any("._invoke" in f for f in found) and any("._functions" in f for f in found)
