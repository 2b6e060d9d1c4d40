"""The runner child's entry point: one job, handed to the code for its role
(reference in reference.py, build and candidate in harness.py, analyze in analyze.py, tune in
tune.py, the reference again in float64 in reference64.py), with a final "done"
frame, or an "error" frame naming the phase that failed."""

from __future__ import annotations

from typing import Any

from ..phases.analyze import run_analyze
from ..phases.harness import Emit, run_build, run_candidate
from ..phases.loader import LoadError, describe
from ..phases.reference import run_reference
from ..phases.reference64 import run_reference64
from ..phases.tune import run_tune


def run(job: dict[str, Any], emit: Emit) -> None:
    try:
        if job["role"] == "reference":
            run_reference(job, emit)
        elif job["role"] == "build":
            run_build(job, emit)
        elif job["role"] == "analyze":
            run_analyze(job, emit)
        elif job["role"] == "tune":
            run_tune(job, emit)
        elif job["role"] == "reference64":
            run_reference64(job, emit)
        else:
            run_candidate(job, emit)
    except LoadError as exc:
        emit({"kind": "error", "phase": "load", "message": str(exc)})
        return
    except Exception as exc:
        emit({"kind": "error", "phase": "run", "message": describe(exc, job["filename"])})
        return
    emit({"kind": "done"})
