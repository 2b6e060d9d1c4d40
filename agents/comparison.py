"""A result is a comparison, not a kernel.

From the best verified kernel's judge timing -- the kernel, eager PyTorch and
torch.compile, timed in the same judge run -- say which of the three is fastest
and what to use. Only numbers the judge measured appear: where it reported no
speedup (Triton's interpreter on the CPU, a failed timing) the answer is
"unknown", never a guess.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Fastest = Literal["kernel", "eager", "torch.compile", "unknown"]
FASTEST: tuple[str, ...] = ("kernel", "eager", "torch.compile", "unknown")


@dataclass(frozen=True)
class Comparison:
    fastest: Fastest
    summary: str
    recommendation: str
    attempt_id: str | None = None
    kernel_ms: float | None = None       # medians of the same judge run
    eager_ms: float | None = None
    compile_ms: float | None = None
    speedup_vs_eager: float | None = None     # eager / kernel
    speedup_vs_compile: float | None = None   # torch.compile / kernel
    label: str = ""                           # what the timing was measured on

    @property
    def kernel_beats_eager(self) -> bool:
        return self.speedup_vs_eager is not None and self.speedup_vs_eager > 1.0

    @property
    def kernel_won(self) -> bool:
        return self.fastest == "kernel"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "kernel_beats_eager": self.kernel_beats_eager}


def _median(timing: dict[str, Any], name: str) -> float | None:
    entry = timing.get(name)
    value = entry.get("median_ms") if isinstance(entry, dict) else None
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def _speedup(timing: dict[str, Any], name: str) -> float | None:
    entry = timing.get(name)
    value = entry.get("value") if isinstance(entry, dict) else None
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def _not_measured_why(timing: dict[str, Any]) -> str:
    note = str(timing.get("note") or "")
    if note.startswith("thread counts differ"):
        return "thread counts differed between the timed runs"
    if timing.get("device", "cpu") == "cpu":
        return "Triton interpreter"
    return "the judge reported no speedup"


def compare(timing: dict[str, Any] | None, verified: bool = True, attempt_id: str | None = None) -> Comparison:
    """The fastest of {kernel, eager, torch.compile} for the best verified kernel.

    ``timing`` is that kernel's judge timing (``candidate``, ``baseline_eager``,
    ``baseline_compile`` medians; ``speedup_vs_eager`` / ``speedup_vs_compile``, which
    the judge reports only for a passing kernel it timed for real). ``verified`` False
    (or no timing and no attempt) means there is no verified kernel.
    """
    if not verified:
        return Comparison("unknown", "No verified kernel.",
                          "Keep the reference: no kernel passed the judge.")
    timing = timing or {}
    kernel_ms, eager_ms, compile_ms = (_median(timing, n) for n in ("candidate", "baseline_eager", "baseline_compile"))
    vs_eager, vs_compile = _speedup(timing, "speedup_vs_eager"), _speedup(timing, "speedup_vs_compile")
    base = dict(attempt_id=attempt_id, kernel_ms=kernel_ms, eager_ms=eager_ms, compile_ms=compile_ms,
                speedup_vs_eager=vs_eager, speedup_vs_compile=vs_compile, label=str(timing.get("label") or ""))
    if vs_eager is None:
        why = _not_measured_why(timing)
        return Comparison("unknown", f"Speed not measured ({why}): correctness only.",
                          "The kernel is verified correct; time it where the judge measures speed "
                          "(a GPU, or backend cpu) before choosing it over the reference.", **base)
    # torch.compile against eager, from the same run's two medians (ratios of the kernel's speedups
    # when a median is missing from an older record).
    compile_vs_eager = (eager_ms / compile_ms if eager_ms and compile_ms
                        else vs_eager / vs_compile if vs_compile else None)
    times = {"kernel": 1.0 / vs_eager, "eager": 1.0}
    if compile_vs_eager is not None:
        times["torch.compile"] = 1.0 / compile_vs_eager
    fastest: Fastest = min(times, key=lambda k: (times[k], k != "eager"))  # a tie keeps the reference
    summary = _summary(fastest, vs_eager, vs_compile, compile_vs_eager)
    return Comparison(fastest, summary, _recommend(fastest, vs_eager, vs_compile, compile_vs_eager), **base)


def _x(value: float) -> str:
    return f"{value:.2f}x" if value < 10 else f"{value:.1f}x"


def _summary(fastest: Fastest, vs_eager: float, vs_compile: float | None, compile_vs_eager: float | None) -> str:
    compiled = f", torch.compile {_x(compile_vs_eager)} eager" if compile_vs_eager is not None else \
        " (torch.compile not timed)"
    head = {"kernel": "Fastest: the kernel", "eager": "Fastest: eager PyTorch (the reference)",
            "torch.compile": "Fastest: torch.compile"}[fastest]
    return f"{head}. Same judge run: kernel {_x(vs_eager)} eager{compiled}."


def _recommend(fastest: Fastest, vs_eager: float, vs_compile: float | None, compile_vs_eager: float | None) -> str:
    if fastest == "kernel":
        vs_c = f", {_x(vs_compile)} faster than torch.compile" if vs_compile is not None else ""
        return f"Use the kernel: {_x(vs_eager)} faster than eager{vs_c}."
    if vs_eager <= 1.0:
        head = f"Keep the reference: no kernel beat eager PyTorch (best {_x(vs_eager)})"
        if fastest == "torch.compile" and compile_vs_eager is not None:
            return f"{head}; torch.compile is {_x(compile_vs_eager)} faster than eager here, use it."
        return head + "."
    # the kernel beats eager but torch.compile beats the kernel
    slower = f" ({_x(vs_compile)} torch.compile)" if vs_compile is not None else ""
    return (f"Use torch.compile: it is {_x(compile_vs_eager or 0.0)} faster than eager here; the best kernel is "
            f"{_x(vs_eager)} faster than eager but slower than torch.compile{slower}.")


def compare_attempt(attempt: Any | None) -> Comparison:
    """The comparison for a best attempt (anything with ``id``, ``verdict`` and ``timing``), or None."""
    if attempt is None or getattr(attempt, "verdict", None) != "pass":
        return compare(None, verified=False)
    return compare(getattr(attempt, "timing", None), attempt_id=getattr(attempt, "id", None))


def compare_record(best: dict[str, Any] | None) -> Comparison:
    """The same from a stored record (a job's best candidate, a summary's ``best``): keys
    ``verdict``, ``timing`` and ``id`` or ``attempt_id``."""
    if not best or best.get("verdict") != "pass":
        return compare(None, verified=False)
    return compare(best.get("timing"), attempt_id=best.get("id") or best.get("attempt_id"))
