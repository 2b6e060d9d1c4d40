"""Part (a): every bundled correct solution passes, every wrong one fails.

The bundled solutions are Triton kernels: on the CPU the judge runs them in
Triton's interpreter (correctness only), on CUDA for real. Those headed ``# device:
cuda`` are CUDA C++ (load_inline), judged on a GPU only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .common import PROBLEMS, OptionsFor, Part, failed_checks, header

# The outside-clock check compares two host clocks; a burst of other work on a shared
# CPU host can trip it for an honest kernel, so such a fail is judged once more.
TIMING_NOISE = {"timer_corroborated"}
QUICK = ("level1/1_relu_scale.py", "level2/12_linear_softmax.py")


def on_device(solution: Path, device: str) -> bool:
    """A solution headed ``# device: cuda`` (CUDA C++) is judged on a GPU only."""
    return header(solution, "device") in (None, device)


def cases(quick: bool, device: str = "cpu") -> list[tuple[Path, Path]]:
    problems = sorted(p for p in PROBLEMS.glob("level*/*.py") if not p.name.startswith("_"))
    if quick:
        problems = [p for p in problems if str(p.relative_to(PROBLEMS)) in QUICK] or problems[:2]
    out = []
    for problem in problems:
        folder = problem.parent / "solutions" / problem.stem.split("_", 1)[1]
        out += [(problem, s) for s in sorted(folder.glob("*.py")) if on_device(s, device)]
    return out


def run(judge: Any, options_for: OptionsFor, quick: bool, device: str = "cpu") -> Part:
    part = Part("solutions")
    options = options_for("triton")
    for problem, solution in cases(quick, device):
        expect = "pass" if solution.name.startswith("correct_") else "fail"
        result = judge.evaluate(problem.read_text(), solution.read_text(), problem.name, solution.name, options)
        if expect == "pass" and result.verdict == "fail" and set(failed_checks(result)) <= TIMING_NOISE:
            result = judge.evaluate(problem.read_text(), solution.read_text(), problem.name, solution.name, options)
        part.cases.append({"problem": str(problem.relative_to(PROBLEMS)), "solution": solution.name,
                           "expected": expect, "verdict": result.verdict, "ok": result.verdict == expect,
                           "reasons": result.reasons[:3]})
    bad = [c for c in part.cases if not c["ok"]]
    part.verdict = "pass" if part.cases and not bad else "fail"
    part.numbers = {"judged": len(part.cases), "as_expected": len(part.cases) - len(bad)}
    part.summary = (f"{len(part.cases) - len(bad)}/{len(part.cases)} solutions got the verdict their name promises"
                    + (f"; wrong: {', '.join(c['problem'] + ':' + c['solution'] for c in bad)}" if bad else ""))
    return part
