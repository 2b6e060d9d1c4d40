"""Runs the parts in order with one warm judge and collects their verdicts."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from . import ceilings, engine, redteam, solutions, timing
from .common import OptionsFor, Part

PARTS = ("ceilings", "solutions", "redteam", "engine", "timing")


def run_selftest(device: str, options_for: OptionsFor, quick: bool = False, parts: tuple[str, ...] = PARTS,
                 on_part: Callable[[Part], None] | None = None) -> dict[str, Any]:
    """``device`` is already resolved (cpu | cuda). Every part runs even when one fails."""
    from sandbox import Judge

    started = time.monotonic()
    done: list[Part] = []
    from app.hardware import cpu_threads
    from app.settings import get_settings

    threads = cpu_threads(get_settings().cpu_threads)  # the judge's own count (``compose.eval_options``)
    runners: dict[str, Callable[[Any], Part]] = {
        "ceilings": lambda j: ceilings.run(device, threads),
        "solutions": lambda j: solutions.run(j, options_for, quick, device),
        "redteam": lambda j: redteam.run(j, options_for, device, quick),
        "engine": lambda j: engine.run(j, options_for, device, quick),
        "timing": lambda j: timing.run(j, options_for, device, quick),
    }
    with Judge(warm=True) as judge:
        for name in parts:
            t0 = time.monotonic()
            try:
                part = runners[name](judge)
            except Exception as exc:  # a part that crashes is a failed part, the others still run
                part = Part(name, "fail", f"the part raised {type(exc).__name__}: {exc}")
            part.elapsed_s = time.monotonic() - t0
            done.append(part)
            if on_part:
                on_part(part)
    verdict = "fail" if any(p.verdict == "fail" for p in done) else "pass"
    return {"verdict": verdict, "device": device, "quick": quick,
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - (time.monotonic() - started))),
            "elapsed_s": round(time.monotonic() - started, 1), "parts": {p.name: p.to_json() for p in done}}
