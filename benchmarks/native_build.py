"""Build cost of a native kernel: build + load of a 50-line C kernel, cold
(new source: compiler runs) and cached (same source: the library is found by
its source key), with the loader (kforge_native.load_c, standalone), and the
judge's trusted build (a build job in the warm process sandbox, bytes back to
the judge's cache).

    .venv/bin/python benchmarks/native_build.py [--n 7]

Prints a Markdown table with medians (CPU model, load average, date).
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sandbox import native_sources  # noqa: E402
from sandbox.judge import Judge  # noqa: E402
from sandbox.native import build as native_build  # noqa: E402
from sandbox.runner.measure import timing  # noqa: E402
from sandbox.runner.native import library as native  # noqa: E402

# 50 lines of C: a row-wise layer norm with an OpenMP-parallel outer loop.
KERNEL = r"""
#include <math.h>
#include <stdint.h>
/* TAG
 * Row-wise layer norm: mean, variance, then normalise, scale and shift;
 * one OpenMP thread per block of rows, SIMD inside a row. */
static inline float row_mean(const float* x, int64_t n) {
    float s = 0.0f;
    #pragma omp simd reduction(+:s)
    for (int64_t i = 0; i < n; i++) s += x[i];
    return s / (float)n;
}

static inline float row_var(const float* x, int64_t n, float mean) {
    float s = 0.0f;
    #pragma omp simd reduction(+:s)
    for (int64_t i = 0; i < n; i++) {
        const float d = x[i] - mean;
        s += d * d;
    }
    return s / (float)n;
}

static inline void row_norm(const float* x, const float* w, const float* b, float* y,
                            int64_t n, float mean, float inv) {
    #pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        y[i] = (x[i] - mean) * inv * w[i] + b[i];
    }
}

void layer_norm(const float* x, const float* w, const float* b, float* y,
                int64_t rows, int64_t cols, float eps) {
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        const float mean = row_mean(xr, cols);
        const float var = row_var(xr, cols, mean);
        const float inv = 1.0f / sqrtf(var + eps);
        row_norm(xr, w, b, yr, cols, mean, inv);
    }
}

void scale_shift(const float* x, float* y, int64_t n, float s, float t) {
    #pragma omp parallel for simd
    for (int64_t i = 0; i < n; i++) {
        y[i] = x[i] * s + t;
    }
}
"""
PROTOS = ["void layer_norm(const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t cols, float eps)",
          "void scale_shift(const float* x, float* y, int64_t n, float s, float t)"]


def loader_times(n: int) -> tuple[list[float], list[float]]:
    os.environ["KFORGE_NATIVE_CACHE"] = tempfile.mkdtemp(prefix="kforge-bench-native-")
    cold, cached = [], []
    for _ in range(n):
        src = KERNEL.replace("TAG", uuid.uuid4().hex)
        t0 = time.perf_counter()
        native.load_c(src, PROTOS, name="layer_norm")
        cold.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        native.load_c(src, PROTOS, name="layer_norm")
        cached.append(time.perf_counter() - t0)
    return cold, cached


def judge_times(n: int) -> tuple[list[float], list[float]]:
    cold, cached = [], []
    with Judge(warm=True) as judge:
        session = judge.session("process", "cpu")
        versions = session.ready.get("native")

        def run(job: dict) -> object:
            return session.run(job, 120, 4096, 64)

        for _ in range(n):
            code = f'from kforge_native import load_c\nSRC = r"""{KERNEL.replace("TAG", uuid.uuid4().hex)}"""\n' \
                   f'lib = load_c(SRC, {PROTOS!r}, name="layer_norm")\n'
            sources = native_sources.extract(ast.parse(code), "bench.py").sources
            for into in (cold, cached):
                t0 = time.perf_counter()
                built = native_build.build_sources(sources, versions, set(), run, "cpu")
                into.append(time.perf_counter() - t0)
                assert built.prebuilt and not built.errors, built.errors
    return cold, cached


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=7)
    args = p.parse_args()
    lines = len([line for line in KERNEL.strip().splitlines()])
    load = os.getloadavg()[0]
    lc, lk = loader_times(args.n)
    jc, jk = judge_times(args.n)
    print(f"- {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {timing.cpu_model()}; load average {load:.2f} "
          f"at start, {os.getloadavg()[0]:.2f} at end (shared machine); {lines}-line kernel, {args.n} builds each")
    print()
    print("| path | cold (median) | cached (median) |")
    print("| --- | --- | --- |")
    print(f"| kforge_native.load_c, standalone (build + load) | {statistics.median(lc) * 1e3:.0f} ms | "
          f"{statistics.median(lk) * 1e3:.1f} ms |")
    print(f"| judge trusted build (build job in the warm process sandbox, bytes to the judge's cache) | "
          f"{statistics.median(jc) * 1e3:.0f} ms | {statistics.median(jk) * 1e3:.1f} ms |")


if __name__ == "__main__":
    main()
