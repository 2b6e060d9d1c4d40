"""Part (0): this machine's ceilings (``sandbox/ceilings.py``), measured again first, on
the quiet machine the other parts then load: memory bandwidth and fp32 GEMM rate with
the judge's threads, kept for every later judgement's roofline fractions.

Verdict: pass when every ceiling's spread over its runs is within SPREAD_TARGET; warn
when it is not on a loaded host (other work moved the numbers), fail on a quiet one.
"""

from __future__ import annotations

from typing import Any

from .common import Part, load_per_core

SPREAD_TARGET = 0.10
LOADED = 0.5


def run(device: str, threads: int) -> Part:
    from sandbox.ceilings import ceilings

    part = Part("ceilings")
    if device != "cpu":
        part.verdict, part.summary = "warn", f"ceilings on {device} are not measured yet: no roofline fractions there"
        return part
    load = load_per_core()
    entry: dict[str, Any] = ceilings(threads, refresh=True)
    spreads = {f"memory {k}": v["spread"] for k, v in entry["bandwidth_gbs"].items()}
    spreads["fp32 GEMM"] = entry["gemm_fp32_gflops"]["spread"]
    wide = {k: v for k, v in spreads.items() if v > SPREAD_TARGET}
    bw = entry["bandwidth_gbs"]
    part.numbers = {**entry, "load_per_core": round(load, 2)}
    part.summary = (f"{threads} thread(s): copy {bw['copy']['best']:.1f} GB/s, triad {bw['triad']['best']:.1f} GB/s, "
                    f"read {bw['read']['best']:.1f} GB/s, fp32 GEMM {entry['gemm_fp32_gflops']['best']:.1f} GFLOP/s "
                    f"in {entry['seconds']:.1f} s")
    if wide:
        part.summary += "; spread over target: " + ", ".join(f"{k} {v:.0%}" for k, v in wide.items())
        part.verdict = "warn" if load >= LOADED else "fail"
    else:
        part.verdict = "pass"
    return part
