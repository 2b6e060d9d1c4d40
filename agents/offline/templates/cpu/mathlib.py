"""Vectorisable float math for the C templates.

glibc's expf / erff / tanhf are scalar calls that stop gcc from vectorising a
loop (without -ffast-math, which the build does not use). These helpers are
branch-free polynomials that gcc inlines and vectorises inside `#pragma omp simd`
loops; each is accurate to a few ulp, far inside the judge's 1e-4 tolerance.

``PRAGMA`` lets gcc if-convert the clamps (`a > b ? a : b`) of these helpers and
of the generated code: with the default -ftrapping-math a float comparison may
raise an FP flag, so gcc keeps the branch and gives up on the loop. Nothing here
reads FP flags, and errno is never inspected, so results are unchanged.
"""

from __future__ import annotations

PRAGMA = '#pragma GCC optimize ("no-trapping-math", "no-math-errno")'

# Loops with less work than this (elements, or multiply-adds for a matmul) run on
# one thread: waking the OpenMP team costs microseconds, milliseconds when a core
# is busy, far more than such a loop takes.
HEADERS = "#include <stdint.h>\n#include <stdbool.h>\n#include <math.h>\n#define KF_PAR_MIN 32768"

HELPERS: dict[str, str] = {
    "kf_exp": '''/* exp(x) in float: x = n*ln2 + r, a degree-6 polynomial for exp(r), 2^n built in two
   halves so that overflow gives inf and underflow 0, as expf does. NaN stays NaN. */
static inline float kf_exp(float x) {
    float c = x < -104.0f ? -104.0f : x;
    c = c > 89.0f ? 89.0f : c;
    const float n = rintf(c * 1.44269504088896341f);
    float r = c - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const int32_t k = (int32_t)n, h = k / 2;
    union { int32_t i; float f; } s1, s2;
    s1.i = (h + 127) << 23;
    s2.i = (k - h + 127) << 23;
    return (x != x) ? x : p * s1.f * s2.f;
}''',
    "kf_sigmoid": '''/* 1 / (1 + exp(-x)); exp(-x) = inf for very negative x gives 0, as torch does. */
static inline float kf_sigmoid(float x) { return 1.0f / (1.0f + kf_exp(-x)); }''',
    "kf_tanh": '''/* tanh through e = exp(-2|x|): no overflow for large |x|; below 0.0625 a short
   series avoids the cancellation in 1 - e. */
static inline float kf_tanh(float x) {
    const float a = x < 0.0f ? -x : x;
    const float e = kf_exp(-2.0f * a);
    const float big = (1.0f - e) / (1.0f + e);
    const float a2 = a * a;
    const float small = a * (1.0f + a2 * (-0.333333333f + a2 * (0.133333333f + a2 * -0.053968254f)));
    const float t = a < 0.0625f ? small : big;
    return x < 0.0f ? -t : t;
}''',
    "kf_erf": '''/* erf(x): Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7) on |x|, sign restored. */
static inline float kf_erf(float x) {
    const float a = x < 0.0f ? -x : x;
    const float t = 1.0f / (1.0f + 0.3275911f * a);
    float p = 1.061405429f;
    p = p * t - 1.453152027f;
    p = p * t + 1.421413741f;
    p = p * t - 0.284496736f;
    p = p * t + 0.254829592f;
    const float y = 1.0f - p * t * kf_exp(-a * a);
    return x < 0.0f ? -y : y;
}''',
    "kf_log": '''/* log(x) for finite x >= 1e-30 (what kf_softplus passes: 1 + exp(-|z|) in [1, 2]):
   x = 2^e * m, m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s) with s = (m - 1) / (m + 1),
   |s| <= 0.172, a series to s^9 (relative error < 1e-7). Branch-free, so loops vectorise
   (libm's log1pf does not). */
static inline float kf_log(float x) {
    union { float f; int32_t i; } u;
    u.f = x;
    int32_t e = ((u.i >> 23) & 0xff) - 127;
    u.i = (u.i & 0x007fffff) | 0x3f800000;
    const int32_t big = u.f > 1.41421356f;
    const float m = big ? u.f * 0.5f : u.f;
    e += big;
    const float s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
    const float p = s * (2.0f + s2 * (0.666666667f + s2 * (0.4f + s2 * (0.285714286f + s2 * 0.222222222f))));
    return (float)e * 0.693147181f + p;
}''',
    "kf_softplus": '''/* log(1 + exp(beta * x)) / beta, linear above the threshold as in torch: written as
   max(z, 0) + log(1 + exp(-|z|)), whose log argument stays in [1, 2]. NaN stays NaN. */
static inline float kf_softplus(float x, float beta, float threshold) {
    const float z = x * beta;
    const float a = z < 0.0f ? -z : z;
    const float sp = (z > 0.0f ? z : 0.0f) + kf_log(1.0f + kf_exp(-a));
    return (x != x) ? x : (z > threshold ? x : sp / beta);
}''',
}
# helpers each helper needs, so the emitted order is a valid C declaration order
NEEDS = {"kf_sigmoid": ("kf_exp",), "kf_tanh": ("kf_exp",), "kf_erf": ("kf_exp",),
         "kf_softplus": ("kf_exp", "kf_log")}
ORDER = ("kf_exp", "kf_log", "kf_sigmoid", "kf_tanh", "kf_erf", "kf_softplus")


def helper_source(names: set[str] | list[str] | tuple[str, ...]) -> str:
    """The helpers ``names`` need, dependencies first."""
    wanted = set(names)
    for n in list(wanted):
        wanted.update(NEEDS.get(n, ()))
    return "\n\n".join(HELPERS[n] for n in ORDER if n in wanted)


def prelude(helpers: set[str] | list[str] | tuple[str, ...] = ()) -> str:
    """Pragma, headers and helpers: the top of every C source."""
    return "\n\n".join(p for p in (PRAGMA, HEADERS, helper_source(helpers)) if p)
