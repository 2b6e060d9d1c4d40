"""What a `kforge batch run` folder says, as the tables docs/benchmarks.md carries:
per problem (verdict, fastest of kernel / eager / torch.compile, speedups), per
family, geomeans per level over the correct problems, and the judge's verdicts on
every candidate it judged (honest engine kernels: a failure is an engine bug or a
false reject, named by its failing checks) with the judge time per candidate.

    .venv/bin/python benchmarks/batch_summary.py OUT_DIR [--markdown]
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import statistics
from pathlib import Path
from typing import Any


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def attempts(out: Path) -> list[dict[str, Any]]:
    found = []
    for path in sorted(out.glob("problems/*/*/s*/trajectory.json")):
        problem = "/".join(path.parts[-4:-2])
        for rnd in json.loads(path.read_text()).get("rounds", []):
            for a in rnd.get("attempts", []):
                found.append({"problem": problem, "id": a.get("id"), "verdict": a.get("verdict"),
                              "failed": [k for k, v in (a.get("checks") or {}).items() if v == "fail"],
                              "elapsed_s": a.get("elapsed_s"), "strategy": a.get("strategy", ""),
                              "judge_cost": a.get("judge_cost") or {}})
    return found


def tuning_passes(out: Path) -> list[dict[str, Any]]:
    """Every search's tuning pass (backend cpu): variants, how many were timed, seconds."""
    found = []
    for path in sorted(out.glob("problems/*/*/s*/trajectory.json")):
        tuning = json.loads(path.read_text()).get("tuning") or {}
        if tuning.get("variants"):
            found.append({"variants": len(tuning["variants"]), "timed": (tuning.get("counts") or {}).get("timed", 0),
                          "elapsed_s": tuning.get("elapsed_s", 0.0)})
    return found


def family(strategy: str) -> str:
    """The engine family a strategy names ("offline: conv {...}" -> conv)."""
    words = strategy.replace("offline:", "").split()
    return words[0] if words else "?"


def summary(out: Path) -> dict[str, Any]:
    report = json.loads((out / "report.json").read_text())
    problems = report["problems"]
    tried = attempts(out)
    by_id = {(a["problem"], a["id"]): a for a in tried}
    best_family = {}
    for p in problems:  # the winning kernel's family, else the first candidate's
        first = next((a for a in tried if a["problem"] == p["problem"]), None)
        best = by_id.get((p["problem"], p.get("best_id"))) or first
        best_family[p["problem"]] = family(best["strategy"]) if best else "-"
    levels: dict[int, list[dict[str, Any]]] = collections.defaultdict(list)
    for p in problems:
        levels[p["level"]].append(p)
    per_level = {}
    for level, ps in sorted(levels.items()):
        ok = [p for p in ps if p.get("correct")]
        per_level[level] = {
            "problems": len(ps), "correct": len(ok),
            "geomean_eager": geomean([p.get("speedup_eager") for p in ok]),
            "geomean_compile": geomean([p.get("speedup_compile") for p in ok]),
            "kernel_fastest": sum(p.get("fastest") == "kernel" for p in ps)}
    fam: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for p in problems:
        if p.get("correct"):
            fam[best_family.get(p["problem"], "?")].append(p)
    per_family = {f: {"problems": len(ps), "geomean_eager": geomean([p.get("speedup_eager") for p in ps]),
                      "geomean_compile": geomean([p.get("speedup_compile") for p in ps])}
                  for f, ps in sorted(fam.items())}
    times = [a["elapsed_s"] for a in tried if isinstance(a.get("elapsed_s"), (int, float))]
    failures = [a for a in tried if a["verdict"] != "pass"]
    passes = tuning_passes(out)
    phases: dict[str, list[float]] = collections.defaultdict(list)
    for a in tried:
        for k, v in a["judge_cost"].items():
            if isinstance(v, (int, float)):
                phases[k].append(v)
    return {"judge_cost_median_s": {k: round(statistics.median(v), 3) for k, v in sorted(phases.items())},
            "tuning": {"passes": len(passes),
                       "variants_median": statistics.median(p["variants"] for p in passes) if passes else None,
                       "timed_median": statistics.median(p["timed"] for p in passes) if passes else None,
                       "seconds_median": statistics.median(p["elapsed_s"] for p in passes) if passes else None,
                       "seconds_max": max(p["elapsed_s"] for p in passes) if passes else None},
            "run": report.get("run"), "levels": per_level, "families": per_family, "problems": problems,
            "candidates": len(tried), "candidates_failed": failures,
            "judge_s_per_candidate": {"median": statistics.median(times) if times else None,
                                      "max": max(times) if times else None}}


def fmt(x: float | None) -> str:
    return f"{x:.2f}x" if isinstance(x, (int, float)) else "-"


def markdown(s: dict[str, Any]) -> str:
    lines = ["| problem | result | fastest | vs eager | vs torch.compile | held-out |", "|---|---|---|---|---|---|"]
    for p in s["problems"]:
        lines.append(f"| {p['problem']} | {'pass' if p.get('correct') else '**fail** ' + (p.get('reasons') or '')[:60]} | "
                     f"{p.get('fastest') or '-'} | {fmt(p.get('speedup_eager'))} | {fmt(p.get('speedup_compile'))} | "
                     f"{p.get('held_out') or '-'} |")
    lines += ["", "| level | problems | correct | geomean vs eager | geomean vs torch.compile | kernel fastest |",
              "|---|---|---|---|---|---|"]
    for level, v in s["levels"].items():
        lines.append(f"| {level} | {v['problems']} | {v['correct']} | {fmt(v['geomean_eager'])} | "
                     f"{fmt(v['geomean_compile'])} | {v['kernel_fastest']} |")
    lines += ["", "| family (the winning kernel's) | correct problems | geomean vs eager | geomean vs torch.compile |",
              "|---|---|---|---|"]
    for f, v in s["families"].items():
        lines.append(f"| {f} | {v['problems']} | {fmt(v['geomean_eager'])} | {fmt(v['geomean_compile'])} |")
    j = s["judge_s_per_candidate"]
    lines += ["", f"Candidates judged: {s['candidates']}, failed: {len(s['candidates_failed'])}"
              + "".join(f"\n- {a['problem']} {a['id']}: {', '.join(a['failed'])}" for a in s["candidates_failed"]),
              "", f"Judge time per candidate: median {j['median']:.1f} s, max {j['max']:.1f} s"
              if j["median"] is not None else ""]
    if s["judge_cost_median_s"]:
        lines += ["", "Judge cost by phase, median over the candidates (s): " + ", ".join(
            f"{k} {v:g}" for k, v in sorted(s["judge_cost_median_s"].items(), key=lambda kv: -kv[1]))]
    t = s["tuning"]
    if t["passes"]:
        lines += ["", f"Tuning passes: {t['passes']}, median {t['variants_median']:g} variants "
                      f"({t['timed_median']:g} timed) in {t['seconds_median']:.1f} s, max {t['seconds_max']:.1f} s"]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    s = summary(Path(args.out))
    print(markdown(s) if args.markdown else json.dumps(s, indent=1, default=str))


if __name__ == "__main__":
    main()
