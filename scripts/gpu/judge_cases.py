"""Judges the GPU path's cases on a GPU host with one warm judge, one JSON line per case
appended to OUT as each ends (a run cut short keeps what it judged). Run from the project
root: ``python scripts/gpu/judge_cases.py OUT.jsonl [--sandbox process|docker] [--only core]``.

Cases, in order: the bundled relu_scale solutions (Triton correct and wrong, CUDA C++
correct), linear_softmax's, then every red-team fixture headed ``# device: cuda`` (each must
fail on the check its ``# caught-by:`` header names), then the Triton cheats of
``selftest --quick``. Each line carries the verdict, the failed checks, what
``timer_corroborated`` saw and the timing summary (with the host's per-phase times).
``--only core``: the solutions alone; ``--only cheats``: the fixtures alone."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.getcwd())

from app.compose import eval_options  # noqa: E402
from app.gpu_lock import LockedEvaluator, device_key  # noqa: E402
from app.selftest.common import FIXTURES, PROBLEMS, failed_checks, header  # noqa: E402
from app.selftest.redteam import QUICK  # noqa: E402

SOLUTIONS = [("level1/1_relu_scale.py", "relu_scale", n) for n in ("correct_triton.py", "wrong_hardcoded_size.py",
                                                                    "correct_cuda.py")]
SOLUTIONS += [("level2/12_linear_softmax.py", "linear_softmax", n) for n in ("correct_triton.py",)]


def cases(only: str | None) -> list[dict]:
    found = []
    for problem, folder, name in SOLUTIONS:
        path = PROBLEMS / problem.split("/")[0] / "solutions" / folder / name
        if path.exists():
            found.append({"problem": PROBLEMS / problem, "candidate": path,
                          "expect": "pass" if name.startswith("correct_") else "fail", "caught_by": None})
    if only == "core":
        return found
    if only == "cheats":
        found = []
    fixtures = sorted((FIXTURES / "redteam").glob("*.py")) + sorted((FIXTURES / "cheats").glob("*.py"))
    # those that build CUDA C++ (about a minute of nvcc each) last
    gpu = sorted((p for p in fixtures if header(p, "device") == "cuda"), key=lambda p: "load_inline" in p.read_text())
    quick = [p for p in fixtures if p.stem in QUICK and "kforge_native" not in p.read_text()]
    for cheat in gpu + quick:
        found.append({"problem": FIXTURES / "problems" / f"{header(cheat, 'target')}.py", "candidate": cheat,
                      "expect": "fail", "caught_by": header(cheat, "caught-by")})
    return found


def record(case: dict, result, seconds: float) -> dict:
    failed = failed_checks(result)
    ok = result.verdict == case["expect"] and (case["caught_by"] is None or case["caught_by"] in failed)
    corroborated = next((c for c in result.checks if c.name == "timer_corroborated"), None)
    return {"candidate": str(case["candidate"]), "expect": case["expect"], "caught_by": case["caught_by"],
            "verdict": result.verdict, "ok": ok, "failed_checks": failed, "reasons": result.reasons[:3],
            "timer_corroborated": corroborated and {"outcome": corroborated.outcome, "detail": corroborated.detail},
            "timing": result.timing, "seconds": round(seconds, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--sandbox", default="process")
    ap.add_argument("--only", choices=["core", "cheats"], default=None)
    ap.add_argument("--device", default="cuda", help="cpu: a smoke test of this script (GPU-only cases left out)")
    args = ap.parse_args()
    from sandbox import Judge

    options = eval_options(None, "triton", device=args.device, sandbox=args.sandbox)
    lock_dir = Path(os.environ.get("KFORGE_GPU_LOCK_DIR", "/tmp"))
    with Judge(warm=True) as judge, open(args.out, "a") as out:
        evaluator = LockedEvaluator(judge, lock_dir, device_key())  # beside a batch run: one timing at a time
        for case in cases(args.only):
            if args.device != "cuda" and header(case["candidate"], "device") == "cuda":
                continue
            started = time.monotonic()
            try:
                result = evaluator.evaluate(case["problem"].read_text(), case["candidate"].read_text(),
                                            case["problem"].name, case["candidate"].name, options)
                line = record(case, result, time.monotonic() - started)
            except Exception as exc:
                line = {"candidate": str(case["candidate"]), "ok": False, "error": f"{type(exc).__name__}: {exc}"[:800]}
            out.write(json.dumps(line) + "\n")
            out.flush()
            print(f"{'ok ' if line['ok'] else 'BAD'} {line.get('verdict', 'error'):5} {case['candidate'].name} "
                  f"({line.get('seconds', '-')} s) {(line.get('reasons') or [line.get('error', '')])[:1]}", flush=True)


if __name__ == "__main__":
    main()
