"""Synthetic batch records for metric and report tests (the shape task.py writes)."""

from __future__ import annotations

from typing import Any


def record(problem: str, correct: bool = True, device: str = "cuda", eager: float | None = None,
           compile_: float | None = None, held: str | None = "pass", sample: int = 0, level: int = 1,
           status: str = "done", tokens: int = 100, cost: float = 0.01, wall: float = 2.0) -> dict[str, Any]:
    return {"problem": problem, "name": problem.rsplit("/", 1)[-1], "level": level, "sample": sample,
            "status": status, "device": device if status == "done" else None, "correct": correct,
            "speedup_eager": eager, "speedup_compile": compile_,
            "baseline_source": "measured" if eager is not None else None,
            "held_out": {"status": held} if held and correct else None,
            "input_tokens": tokens, "output_tokens": 0, "cost_usd": cost, "wall_s": wall,
            "final": {"verdict": "pass" if correct else "fail", "reasons": [] if correct else ["correctness: 3 differ"]},
            "best": {"id": "r0-c0"}, "error": "boom" if status == "error" else None}


def gpu_run() -> list[dict[str, Any]]:
    """Four problems on a GPU: 2.0x, 0.9x, 1.2x (compile 0.5x, 0.7x, 1.1x), one wrong."""
    return [
        record("level1/1_a", eager=2.0, compile_=0.5),
        record("level1/2_b", eager=0.9, compile_=0.7, held="fail"),
        record("level2/1_c", eager=1.2, compile_=1.1, level=2, held="unavailable"),
        record("level2/2_d", correct=False, level=2, held=None),
    ]
