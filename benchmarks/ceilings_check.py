"""Issue 56's acceptance for the ceilings: `kforge ceilings --refresh` three times (each
run's wall time, the three within 10% of each other), and against an independent measure
written here: a C STREAM-style copy and triad (OpenMP, the same threads, 512 MB arrays,
gcc -O3; no torch) for bandwidth, and torch.mm at 4096^2 under torch.utils.benchmark's
Timer (another size and another clock than the ceilings' 2048^2 best-of-11) for compute.

    .venv/bin/python benchmarks/ceilings_check.py [--threads N]

Prints one JSON object; run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time

C = r"""
#include <stddef.h>
#include <omp.h>
double now(void) { return omp_get_wtime(); }
void init(float* a, float* b, float* c, size_t n) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) { a[i] = 0.0f; b[i] = 1.0f; c[i] = 2.0f; }
}
/* best seconds of reps passes: copy a = b, triad a = b + 3 c */
double best_copy(float* a, const float* b, size_t n, int reps) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t = now();
        #pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) a[i] = b[i];
        t = now() - t; if (t < best) best = t;
    }
    return best;
}
double best_triad(float* a, const float* b, const float* c, size_t n, int reps) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t = now();
        #pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) a[i] = b[i] + 3.0f * c[i];
        t = now() - t; if (t < best) best = t;
    }
    return best;
}
"""


def stream(threads: int, array_bytes: int = 512 << 20, reps: int = 10) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        src, lib = os.path.join(tmp, "s.c"), os.path.join(tmp, "s.so")
        open(src, "w").write(C)
        subprocess.run(["gcc", "-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", src, "-o", lib], check=True)
        os.environ["OMP_NUM_THREADS"] = str(threads)
        so = ctypes.CDLL(lib)
        for f in (so.best_copy, so.best_triad):
            f.restype = ctypes.c_double
        n = array_bytes // 4
        bufs = [(ctypes.c_float * n)() for _ in range(3)]
        so.init(*bufs, ctypes.c_size_t(n))
        copy = so.best_copy(bufs[0], bufs[1], ctypes.c_size_t(n), reps)
        triad = so.best_triad(bufs[0], bufs[1], bufs[2], ctypes.c_size_t(n), reps)
    gb = array_bytes / 1e9
    return {"copy": round(2 * gb / copy, 2), "triad": round(3 * gb / triad, 2)}


def gemm(threads: int, n: int = 4096) -> float:
    import torch
    import torch.utils.benchmark as tb

    torch.set_num_threads(threads)
    x, y = torch.randn(n, n), torch.randn(n, n)
    m = tb.Timer("torch.mm(x, y)", globals={"torch": torch, "x": x, "y": y},
                 num_threads=threads).blocked_autorange(min_run_time=3)  # the Timer defaults to one thread
    return round(2 * n ** 3 / m.median / 1e9, 2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()
    kforge = os.path.join(os.path.dirname(sys.executable), "kforge")
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        out = subprocess.run([kforge, "ceilings", "--refresh", "--json", "--threads", str(args.threads)],
                             check=True, capture_output=True, text=True).stdout
        entry = json.loads(out.strip().splitlines()[-1])
        runs.append({"wall_s": round(time.perf_counter() - started, 2), "measure_s": entry["seconds"],
                     "copy": entry["bandwidth_gbs"]["copy"]["best"], "triad": entry["bandwidth_gbs"]["triad"]["best"],
                     "read": entry["bandwidth_gbs"]["read"]["best"], "write": entry["bandwidth_gbs"]["write"]["best"],
                     "gemm": entry["gemm_fp32_gflops"]["best"]})
    spread = {k: round((max(r[k] for r in runs) - min(r[k] for r in runs)) / min(r[k] for r in runs), 4)
              for k in ("copy", "triad", "read", "write", "gemm")}
    independent = {**stream(args.threads), "gemm": gemm(args.threads)}
    last = runs[-1]
    versus = {k: round(last[k] / independent[k] - 1, 4) for k in ("copy", "triad", "gemm")}
    print(json.dumps({"threads": args.threads, "machine": entry["machine"], "runs": runs, "spread_of_three": spread,
                      "independent": independent, "kept_vs_independent": versus}, indent=1))


if __name__ == "__main__":
    main()
