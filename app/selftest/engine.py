"""Part (c): the offline engine on a small bundled suite, through the judge, with the
measured speedups vs eager and torch.compile.

Backend cpu (native C, really timed) on the CPU; triton on CUDA. The part passes
when the engine finds a verified kernel for every problem; speedups are reported,
not required (on a shared host they say more about the load than the kernels).
"""

from __future__ import annotations

import math
from typing import Any

from agents.offline import OfflineEngine, run_offline
from agents.search import compare

from .common import PROBLEMS, OptionsFor, Part

SUITE = ("level1/1_relu_scale.py", "level1/2_gelu.py", "level2/1_linear_bias_relu.py")


def _value(timing: dict[str, Any], key: str) -> float | None:
    v = (timing or {}).get(key)
    if isinstance(v, dict):
        v = v.get("value")
    return float(v) if isinstance(v, (int, float)) else None


def geomean(xs: list[float]) -> float | None:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def run(judge: Any, options_for: OptionsFor, device: str, quick: bool) -> Part:
    part = Part("engine")
    backend = "cpu" if device == "cpu" else "triton"
    suite = SUITE[:1] if quick else SUITE
    eager_all, compile_all = [], []
    for rel in suite:
        path = PROBLEMS / rel
        result = run_offline(judge, path.read_text(), rel, options_for(backend),
                             max_candidates=1 if quick else 3, engine=OfflineEngine(backend))
        best = result.best
        case: dict[str, Any] = {"problem": rel, "ok": best is not None, "judged": len(result.attempts)}
        if best is None:
            case["reason"] = result.reason or "; ".join(r for a in result.attempts for r in a.reasons[:1])
        else:
            eager = _value(best.timing, "speedup_vs_eager")
            comp = _value(best.timing, "speedup_vs_compile")
            comparison = compare(best.timing)
            case.update(family=best.proposal.family, params=best.proposal.params, speedup_vs_eager=eager,
                        speedup_vs_compile=comp, fastest=comparison.fastest,
                        recommendation=comparison.recommendation)
            if eager:
                eager_all.append(eager)
            if comp:
                compile_all.append(comp)
        part.cases.append(case)
    bad = [c for c in part.cases if not c["ok"]]
    part.verdict = "pass" if not bad else "fail"
    part.numbers = {"backend": backend, "problems": len(part.cases), "verified": len(part.cases) - len(bad),
                    "geomean_speedup_eager": geomean(eager_all), "geomean_speedup_compile": geomean(compile_all)}
    ge, gc = part.numbers["geomean_speedup_eager"], part.numbers["geomean_speedup_compile"]
    part.summary = (f"{len(part.cases) - len(bad)}/{len(part.cases)} problems got a verified {backend} kernel; "
                    f"geomean speedup {ge or 0:.2f}x vs eager, {gc or 0:.2f}x vs torch.compile")
    return part
