"""The C pieces of the matmul template that do not depend on the epilogue: the
ISA choice, packing of B into NR-wide panels, and the register-tiled MR x NR
micro-kernel (AVX-512 / AVX2+FMA intrinsics when the compiler targets them,
plain C otherwise).

Layout of packed B: for each batch, ceil(N / NR) panels; panel p holds rows
k = 0..K-1 of columns [p*NR, p*NR + NR), NR floats per k, zero-padded past N,
so the micro-kernel reads one contiguous stream of B whatever B's strides.
"""

from __future__ import annotations

ISA = '''#if defined(__AVX512F__)
#include <immintrin.h>
#define KF_NR 32
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define KF_NR 16
#else
#define KF_NR 16
#endif
#define KF_MR 6'''

NR_FN = "int64_t kf_nr(void)"
PACK_FN = ("void pack_b(const float* b, float* bp, int64_t batch, int64_t K, int64_t N, int64_t sbb, "
           "int64_t sbk, int64_t sbn)")

PACK = '''/* Columns of the B micro-panel width, for the host to size the packed buffer. */
int64_t kf_nr(void) { return KF_NR; }

/* Pack B (batch, K, N), any strides, into NR-wide panels (see the layout above). */
void pack_b(const float* b, float* bp, int64_t batch, int64_t K, int64_t N, int64_t sbb, int64_t sbk, int64_t sbn) {
    const int64_t panels = (N + KF_NR - 1) / KF_NR;
    #pragma omp parallel for collapse(2) schedule(static) if(batch * K * N >= KF_PAR_MIN)
    for (int64_t t = 0; t < batch; t++) {
        for (int64_t p = 0; p < panels; p++) {
            const float* bt = b + t * sbb;
            float* dst = bp + (t * panels + p) * K * KF_NR;
            const int64_t j0 = p * KF_NR;
            const int64_t nj = N - j0 < KF_NR ? N - j0 : KF_NR;
            for (int64_t k = 0; k < K; k++) {
                for (int64_t j = 0; j < nj; j++) dst[k * KF_NR + j] = bt[k * sbk + (j0 + j) * sbn];
                for (int64_t j = nj; j < KF_NR; j++) dst[k * KF_NR + j] = 0.0f;
            }
        }
    }
}'''

MICRO = '''/* tile[MR][NR] = sum over k < kc of a_rows[r][k * sak] * bp[k * NR + j]: the register tile.
   a_rows: MR row pointers into A (rows past M repeat the last row; the caller drops them). */
static inline void kf_micro(int64_t kc, const float* const* a_rows, int64_t sak, const float* bp, float* tile) {
#if defined(__AVX512F__)
    __m512 c[KF_MR][2];
    for (int r = 0; r < KF_MR; r++) { c[r][0] = _mm512_setzero_ps(); c[r][1] = _mm512_setzero_ps(); }
    for (int64_t k = 0; k < kc; k++) {
        const __m512 b0 = _mm512_loadu_ps(bp + k * KF_NR);
        const __m512 b1 = _mm512_loadu_ps(bp + k * KF_NR + 16);
        for (int r = 0; r < KF_MR; r++) {
            const __m512 a = _mm512_set1_ps(a_rows[r][k * sak]);
            c[r][0] = _mm512_fmadd_ps(a, b0, c[r][0]);
            c[r][1] = _mm512_fmadd_ps(a, b1, c[r][1]);
        }
    }
    for (int r = 0; r < KF_MR; r++) {
        _mm512_storeu_ps(tile + r * KF_NR, c[r][0]);
        _mm512_storeu_ps(tile + r * KF_NR + 16, c[r][1]);
    }
#elif defined(__AVX2__) && defined(__FMA__)
    __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps(), c10 = _mm256_setzero_ps();
    __m256 c11 = _mm256_setzero_ps(), c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
    __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps(), c40 = _mm256_setzero_ps();
    __m256 c41 = _mm256_setzero_ps(), c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
    const float *a0 = a_rows[0], *a1 = a_rows[1], *a2 = a_rows[2];
    const float *a3 = a_rows[3], *a4 = a_rows[4], *a5 = a_rows[5];
    for (int64_t k = 0; k < kc; k++) {
        const __m256 b0 = _mm256_loadu_ps(bp + k * KF_NR);
        const __m256 b1 = _mm256_loadu_ps(bp + k * KF_NR + 8);
        const int64_t o = k * sak;
        __m256 a = _mm256_broadcast_ss(a0 + o);
        c00 = _mm256_fmadd_ps(a, b0, c00); c01 = _mm256_fmadd_ps(a, b1, c01);
        a = _mm256_broadcast_ss(a1 + o);
        c10 = _mm256_fmadd_ps(a, b0, c10); c11 = _mm256_fmadd_ps(a, b1, c11);
        a = _mm256_broadcast_ss(a2 + o);
        c20 = _mm256_fmadd_ps(a, b0, c20); c21 = _mm256_fmadd_ps(a, b1, c21);
        a = _mm256_broadcast_ss(a3 + o);
        c30 = _mm256_fmadd_ps(a, b0, c30); c31 = _mm256_fmadd_ps(a, b1, c31);
        a = _mm256_broadcast_ss(a4 + o);
        c40 = _mm256_fmadd_ps(a, b0, c40); c41 = _mm256_fmadd_ps(a, b1, c41);
        a = _mm256_broadcast_ss(a5 + o);
        c50 = _mm256_fmadd_ps(a, b0, c50); c51 = _mm256_fmadd_ps(a, b1, c51);
    }
    _mm256_storeu_ps(tile + 0 * KF_NR, c00); _mm256_storeu_ps(tile + 0 * KF_NR + 8, c01);
    _mm256_storeu_ps(tile + 1 * KF_NR, c10); _mm256_storeu_ps(tile + 1 * KF_NR + 8, c11);
    _mm256_storeu_ps(tile + 2 * KF_NR, c20); _mm256_storeu_ps(tile + 2 * KF_NR + 8, c21);
    _mm256_storeu_ps(tile + 3 * KF_NR, c30); _mm256_storeu_ps(tile + 3 * KF_NR + 8, c31);
    _mm256_storeu_ps(tile + 4 * KF_NR, c40); _mm256_storeu_ps(tile + 4 * KF_NR + 8, c41);
    _mm256_storeu_ps(tile + 5 * KF_NR, c50); _mm256_storeu_ps(tile + 5 * KF_NR + 8, c51);
#else
    float c[KF_MR][KF_NR] = {{0}};
    for (int64_t k = 0; k < kc; k++) {
        for (int r = 0; r < KF_MR; r++) {
            const float a = a_rows[r][k * sak];
            #pragma omp simd
            for (int j = 0; j < KF_NR; j++) c[r][j] += a * bp[k * KF_NR + j];
        }
    }
    for (int r = 0; r < KF_MR; r++)
        for (int j = 0; j < KF_NR; j++) tile[r * KF_NR + j] = c[r][j];
#endif
}'''
