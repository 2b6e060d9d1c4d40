"""Each timed party against the machine's ceilings (issue 56): achieved GB/s and GFLOP/s,
arithmetic intensity, and the fraction of the roofline bound; and the check
``within_physical_limits``.

The problem's minimum work is the reference's: bytes that must move (each input and
parameter read once, each output written once, ``min_bytes`` from the reference's
runner) and FLOPs (the dispatch-level recorder's count, ``work.flops``). With the
machine's bandwidth ``B`` and peak ``P`` (``sandbox/ceilings.py``)

    bound = max(bytes / B, FLOPs / P)        fraction = bound / measured time

A fraction near 1 is a kernel at the machine's limit; a fraction far above 1 is a time
the hardware cannot produce: the timing was fooled. The check allows ``MARGIN`` times
the bound: FLOPs are the reference's algorithm's (a Winograd convolution does up to
~4x fewer multiplies, so it may pass the compute roof honestly), the bandwidth is
DRAM's (an output written into a cache line is not yet in memory when the clock stops),
and a ceiling measured on a loaded machine reads low. A problem whose least bytes fit in
``CACHED`` times the cache the judge flushes between calls (``cache_bytes``, the timing's
``flush_bytes``) may stay in a cache larger than the flush reaches (a VM's share of a host's
cache: 0.15 MB copied in 1 us, 6.5x DRAM's floor): there the memory floor is taken at
``CACHE_SPEEDUP`` times DRAM's bandwidth (a core's caches, not the memory bus), and the
compute floor still holds.
"""

from __future__ import annotations

from typing import Any

from .checks import FAIL, PASS, SKIPPED, Check

NAME = "within_physical_limits"
MARGIN = 5.0
CACHED = 2.0
CACHE_SPEEDUP = 10.0
PARTIES = {"candidate": "kernel", "baseline_eager": "eager", "baseline_compile": "compile"}


def roofline(timing: dict[str, Any], work: dict[str, Any], ceilings: dict[str, Any] | None) -> dict[str, Any]:
    """Per party (kernel, eager, compile): GB/s, GFLOP/s and the fraction of the bound; the
    bound itself and what it was worked out from. Empty when no ceilings or no work."""
    if not ceilings or not timing:
        return {}
    nbytes, flops = float(work.get("min_bytes") or 0), float(work.get("flops") or 0)
    if nbytes <= 0 and flops <= 0:
        return {}
    bw = max(ceilings["bandwidth_gbs"]["copy"]["best"], ceilings["bandwidth_gbs"]["triad"]["best"])
    peak = float(ceilings["gemm_fp32_gflops"]["best"])
    memory_ms, compute_ms = nbytes / (bw * 1e6), flops / (peak * 1e6)
    bound_ms = max(memory_ms, compute_ms)
    out: dict[str, Any] = {
        "min_bytes": int(nbytes), "flops": int(flops), "intensity": round(flops / nbytes, 4) if nbytes else None,
        "bandwidth_gbs": bw, "peak_gflops": peak, "bound_ms": bound_ms,
        "bound_by": "memory" if memory_ms >= compute_ms else "compute", "compute_ms": compute_ms,
        "cache_bytes": int(timing.get("flush_bytes") or 0), "machine": ceilings.get("machine"), "parties": {}}
    for name, label in PARTIES.items():
        t = timing.get(name)
        if not t or not t.get("median_ms"):
            continue
        ms = float(t["median_ms"])
        out["parties"][label] = {"ms": ms, "gbs": _sig(nbytes / (ms * 1e6)), "gflops": _sig(flops / (ms * 1e6)),
                                 "fraction": _sig(bound_ms / ms)}
    return out


def _sig(value: float) -> float:
    """Four significant digits: a fraction of 1e-5 stays one (a far faster machine's ceilings)."""
    return float(f"{value:.4g}")


def check(roof: dict[str, Any], timed: bool) -> Check:
    """Fails when the kernel's time beats the roofline bound by more than ``MARGIN``."""
    if not timed:
        return Check(NAME, SKIPPED, "no speed measured (nothing timed, or Triton's interpreter)")
    kernel = (roof.get("parties") or {}).get("kernel")
    if not roof or kernel is None:
        return Check(NAME, SKIPPED, "no ceilings kept for this machine (`kforge ceilings` measures them)"
                     if not roof else "the kernel was not timed")
    said = (f"{kernel['ms']:.4g} ms against a {roof['bound_by']}-bound floor of {roof['bound_ms']:.4g} ms "
            f"({roof['min_bytes'] / 1e6:.4g} MB at {roof['bandwidth_gbs']:.4g} GB/s, {roof['flops'] / 1e9:.4g} GFLOP "
            f"at {roof['peak_gflops']:.4g} GFLOP/s): {kernel['fraction']:.2f} of the roofline")
    fraction = kernel["fraction"]
    cached = roof["bound_by"] == "memory" and 0 < roof["min_bytes"] <= CACHED * roof.get("cache_bytes", 0)
    if cached:  # the bytes may never leave the caches: they move at the caches' speed, not DRAM's
        memory_ms = roof["min_bytes"] / (CACHE_SPEEDUP * roof["bandwidth_gbs"] * 1e6)
        fraction = max(roof.get("compute_ms", 0.0), memory_ms) / kernel["ms"]
        said += (f"; its {roof['min_bytes'] / 1e6:.4g} MB fit in the caches (the judge flushes "
                 f"{roof['cache_bytes'] / 1e6:.4g} MB), so they are taken at {CACHE_SPEEDUP:g}x DRAM's bandwidth "
                 f"({fraction:.2g} of that floor)")
    if fraction > MARGIN:
        return Check(NAME, FAIL, f"faster than this machine can go, by {fraction:.1f}x the bound "
                                 f"(at most {MARGIN:g}x is allowed): {said}")
    return Check(NAME, PASS, said)


def describe(roof: dict[str, Any]) -> str:
    """One line for people and for the coder's next prompt: the floor and each party's
    fraction of it (what is left to win); empty without a roofline."""
    if not roof.get("parties"):
        return ""
    return (f"{roof['min_bytes'] / 1e6:.4g} MB and {roof['flops'] / 1e9:.4g} GFLOP at least, "
            f"{roof['bound_by']}-bound floor {roof['bound_ms']:.4g} ms on this machine; " + ", ".join(
                f"{name} {p['fraction']:.0%} of it ({p['gbs']:.3g} GB/s, {p['gflops']:.3g} GFLOP/s)"
                for name, p in roof["parties"].items()))
