"""torch.compile as a baseline, and the time its build is given.

The reference's job gets ``ALLOWANCE_S`` on top of the evaluation's timeout when torch.compile
is a baseline (its compilation took 60 s on a loaded 2-CPU machine; a short ``--timeout`` is
for the candidate). Some references compile for longer than that: a Python loop that the
trace unrolls into thousands of nodes (KernelBench level3/34's 256 RNN steps did not build in
330 s). Such a job ends while its compiled baseline is warming or timed; then the reference
runs again without it, the candidate is timed against eager alone, and the result says why
(``timing["compile_missing"]``) -- the problem is judged, not lost to its baseline.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..drivers.base import JobOutcome
from ..verdict.checks import last_phase

ALLOWANCE_S = 180.0


def without_compile(run: Any, ref: JobOutcome, rerun: Callable[[dict[str, Any]], JobOutcome]) -> JobOutcome:
    """``ref`` as it came, or -- when it ended in torch.compile's part of the job -- the
    reference run again (``rerun``) with no compiled baseline, ``run`` (the judge's
    evaluation) told so."""
    where = last_phase(ref)
    if not run.compile_baseline or ref.finished or ref.parked is not None or ref.first("error") is not None \
            or "baseline_compile" not in where:
        return ref
    run.compile_missing = (f"torch.compile of the reference did not build in time ({ref.ended() or 'crashed'} "
                           f"{where}); the candidate is timed against eager only")
    run.compile_baseline, run.compiled_key = False, None
    run.ref_job = {**run.ref_job, "compile_baseline": False}
    return rerun(run.ref_job)
