"""Part (b): the cheat fixtures that apply to the device fail, each for the check its
``# caught-by:`` header names (a fixture without one must fail, for any reason).

Native fixtures (``kforge_native``) apply to the CPU only, GPU-only ones (``# device:
cuda``) to CUDA only; the Triton ones to both devices. They live in
tests/fixtures/judge/cheats and tests/fixtures/judge/redteam, paired with the problem of
their ``# target:`` header.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .common import FIXTURES, OptionsFor, Part, failed_checks, header

# --quick: one fixture per kind of exploit, cheap to judge.
QUICK = ("decoy_kernel", "input_write", "hardcoded_shape", "reference_op_functional", "native_decoy",
         "native_torch_work", "control_zero_add_native", "claim_rerun_memo_native", "timed_stale_ring_native")


def applies(path: Path, device: str) -> bool:
    if header(path, "device") == "cuda":
        return device == "cuda"
    return device == "cpu" or "kforge_native" not in path.read_text()


def cases(device: str, quick: bool) -> list[Path]:
    found = sorted(p for folder in ("cheats", "redteam") for p in (FIXTURES / folder).glob("*.py")
                   if not p.name.startswith("_"))
    found = [p for p in found if applies(p, device)]
    return [p for p in found if p.stem in QUICK] if quick else found


def run(judge: Any, options_for: OptionsFor, device: str, quick: bool) -> Part:
    part = Part("redteam")
    for cheat in cases(device, quick):
        target = header(cheat, "target")
        expected = header(cheat, "caught-by")
        if target is None:
            part.cases.append({"fixture": cheat.stem, "ok": False, "reasons": ["no '# target:' header"]})
            continue
        problem = FIXTURES / "problems" / f"{target}.py"
        started = time.monotonic()
        backend = "cpu" if "kforge_native" in cheat.read_text() else "triton"
        result = judge.evaluate(problem.read_text(), cheat.read_text(), problem.name, cheat.name,
                                options_for(backend))
        failed = failed_checks(result)
        ok = result.verdict == "fail" and (expected is None or expected in failed)
        part.cases.append({"fixture": cheat.stem, "exploit": header(cheat, "exploit"), "caught_by": expected,
                           "verdict": result.verdict, "failed_checks": failed, "ok": ok,
                           "seconds": round(time.monotonic() - started, 1),
                           "reasons": result.reasons[:3]})
    bad = [c for c in part.cases if not c["ok"]]
    part.verdict = "pass" if part.cases and not bad else "fail"
    part.numbers = {"judged": len(part.cases), "caught": len(part.cases) - len(bad)}
    part.summary = (f"{len(part.cases) - len(bad)}/{len(part.cases)} cheats failed for the class they name"
                    + (f"; not caught as named: {', '.join(c['fixture'] for c in bad)}" if bad else ""))
    return part
