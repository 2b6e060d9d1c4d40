"""What one evaluation asks of the judge (``EvalOptions``), and the device it runs on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ProblemError


@dataclass
class EvalOptions:
    device: str = "auto"
    sandbox: str = "process"
    timeout: float = 120.0
    memory_mb: int = 4096
    max_procs: int = 64
    trials: int = 5
    timing_sets: int | None = None  # fresh input sets timed, one repetition each (None: as many as time_reps)
    time_reps: int | None = None
    compile_baseline: bool | None = None
    baseline_cache: bool = True  # native CPU timing: reuse baselines timed on this machine before
    tolerance: tuple[float, float] | None = None
    threads: int | None = None  # on the CPU: threads of candidate and baselines alike (None: every CPU granted)
    interleave: bool = True  # native CPU timing: baselines and candidate timed by turns, set by set
    # One search's candidates: the reference's correctness trials (default and perturbed sizes)
    # run once per warm judge and are replayed for the next candidates of the same reference,
    # same seeds; timing sets and baselines stay fresh per candidate (see ``kept_references.py``).
    reuse_reference: bool = False


def resolve_device(device: str) -> str:
    if device not in ("auto", "cpu", "cuda"):
        raise ProblemError(f"unknown device {device!r}: use auto, cpu or cuda")
    import torch

    available = torch.cuda.is_available()
    if device == "cuda" and not available:
        raise ProblemError("--device cuda was asked for, but no CUDA device is visible to the judge")
    return device if device != "auto" else ("cuda" if available else "cpu")


def cuda_failure(cuda: dict[str, Any], sandbox: str) -> str:
    """Why a cuda runner cannot serve jobs, from what its probe children found (``runner/process/cuda_fork.py``)."""
    if cuda.get("clean") is False:
        return (f"the {sandbox} sandbox's runner touched the CUDA runtime before forking its jobs: "
                "no job could use CUDA (a bug of ours: runner/process/cuda_fork.py)")
    if cuda.get("error"):
        return f"CUDA does not work inside the {sandbox} sandbox: {cuda['error']}"
    return f"no CUDA device is visible inside the {sandbox} sandbox"
