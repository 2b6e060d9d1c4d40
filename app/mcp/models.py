"""What the tools return: typed models (the SDK publishes their JSON schema as
each tool's outputSchema and sends them as structuredContent), built from the
judge's JSON and the REST API's job views, which both backends share."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from sandbox.verdict import roofline

from ..jobs import status as job_status
from ..jobs.status import TERMINAL
from ..schemas import ComparisonOut, RegionOut

COMPARISON = ("The fastest of {best kernel, eager PyTorch, torch.compile} timed in the best kernel's judge run, "
              "with what to use: a kernel slower than eager is never a win.")


class Evaluation(BaseModel):
    verdict: Literal["pass", "fail", "error"] = Field(description="pass only when every check passed.")
    reasons: list[str] = Field(description="One line per failed check, `check: why`; empty on pass.")
    correct: bool = Field(description="The numbers are right (even if another check failed).")
    speedup: float | None = Field(description=(
        "Over eager PyTorch; null unless passing and timed for real: on a GPU, or native C kernels on the CPU "
        "(then CPU wall time, labelled in timing.label)."))
    checks: dict[str, str] = Field(description="check name -> pass | fail | skipped")
    check_details: dict[str, str] = Field(default_factory=dict, description="check name -> detail")
    timing: dict[str, Any] = Field(default_factory=dict)
    roofline: dict[str, Any] = Field(default_factory=dict, description=(
        "Against this machine's kept ceilings (`kforge ceilings`): the problem's least bytes and FLOPs, the bound "
        "they put on its time, and for the kernel, eager and torch.compile their GB/s, GFLOP/s and fraction of "
        "the bound (1.0: at the machine's limit); empty where no ceilings are kept or nothing was timed."))
    device: str | None = None
    elapsed_s: float | None = None
    job_id: str | None = Field(None, description="The service's evaluation job (remote mode).")

    @classmethod
    def of(cls, result: dict[str, Any], job_id: str | None = None) -> Evaluation:
        fields = {k: result[k] for k in cls.model_fields if k in result and result[k] is not None}
        return cls.model_validate({"checks": {}, "speedup": None, "correct": False, **fields, "job_id": job_id})

    def summary(self) -> str:
        failed = [name for name, outcome in self.checks.items() if outcome == "fail"]
        where = f" on {self.device}" if self.device else ""
        if self.verdict == "pass":
            head = f"PASS: every check passed{where}."
        else:
            head = f"{self.verdict.upper()}: {len(failed) or len(self.reasons)} check(s) failed{where}."
        lines = [head, *(f"- {r}" for r in self.reasons)]
        if self.speedup is not None:
            on = f" (CPU timing: {self.timing.get('label') or 'this CPU'})" if self.device == "cpu" else ""
            lines.append(f"Speedup over eager PyTorch: {self.speedup:.2f}x{on}.")
        elif self.verdict == "pass":
            lines.append(f"No speedup reported ({self.timing.get('label') or 'not timed on a GPU'}).")
        if roofline.describe(self.roofline):
            lines.append(f"Roofline: {roofline.describe(self.roofline)}.")
        if self.verdict != "pass":
            lines.append("Fix what the reasons name, then call evaluate_kernel again.")
        return "\n".join(lines)


class CandidateBrief(BaseModel):
    attempt_id: str
    round: int
    strategy: str
    verdict: str
    speedup: float | None
    reasons: list[str] = Field(description="The first few reasons it failed, if it did.")


class JobReport(BaseModel):
    job_id: str
    status: Literal[tuple(s.value for s in job_status.JobStatus)]  # type: ignore[valid-type]
    done: bool = Field(description="The job reached a final status.")
    kind: str
    problem: str
    progress: float = Field(ge=0, le=1, description="Share of the planned rounds completed.")
    rounds_done: int
    rounds_planned: int = Field(description="max_rounds + 1 (round 0 judges the offline engine's kernels).")
    candidates_judged: int
    candidates_passed: int
    best_speedup: float | None
    best_attempt_id: str | None
    best_roofline: dict[str, Any] | None = Field(None, description=(
        "The best kernel's roofline in its judgement (see evaluate_kernel's roofline); null without ceilings."))
    has_best_kernel: bool = Field(description="best_kernel(job_id) will return code.")
    stop_reason: str | None = None
    error: str | None = None
    backend: str = Field("auto", description="The kernel backend: auto until a worker chose one.")
    backend_reason: str | None = Field(None, description='Why, e.g. "auto: no GPU found -> cpu".')
    device: str | None = Field(None, description="What it runs on: the CPU model and threads, or the GPU's name.")
    recent: list[CandidateBrief] = Field(default_factory=list, description="The last candidates judged.")
    comparison: ComparisonOut | None = Field(None, description=COMPARISON)
    regions: list[RegionOut] = Field(default_factory=list, description=(
        "The best kernel's regions in forward order where it is a whole model cut into one kernel per region."))

    @classmethod
    def of(cls, detail: dict[str, Any], recent: int = 5) -> JobReport:
        cands = [c for r in detail.get("rounds", []) for c in r["candidates"]]
        planned = int((detail.get("config") or {}).get("max_rounds", 0)) + 1
        rounds_done = len(detail.get("rounds", []))
        done = detail["status"] in TERMINAL
        choice = (detail.get("config") or {}).get("backend_choice") or {}
        return cls(
            job_id=detail["id"], status=detail["status"], done=done, kind=detail.get("kind", "optimize"),
            problem=detail.get("problem_name", ""),
            progress=1.0 if done else min(0.99, rounds_done / planned), rounds_done=rounds_done,
            rounds_planned=planned, candidates_judged=len(cands),
            candidates_passed=sum(c["verdict"] == "pass" for c in cands), best_speedup=detail.get("best_speedup"),
            best_attempt_id=detail.get("best_attempt_id"),
            best_roofline=((detail.get("result") or {}).get("best") or {}).get("roofline") or None,
            has_best_kernel=detail.get("best_attempt_id") is not None,
            stop_reason=(detail.get("result") or {}).get("stop_reason"), error=detail.get("error"),
            backend=detail.get("backend") or "auto", backend_reason=choice.get("reason"),
            device=choice.get("device_name"), comparison=detail.get("comparison"), regions=detail.get("regions") or [],
            recent=[CandidateBrief(attempt_id=c["attempt_id"], round=c["round"], strategy=c.get("strategy", ""),
                                   verdict=c["verdict"], speedup=c.get("speedup"), reasons=c.get("reasons", [])[:3])
                    for c in cands[-recent:]])

    def line(self) -> str:
        """One line for progress messages."""
        best = f", best {self.best_speedup:.2f}x" if self.best_speedup else (
            ", a verified kernel found" if self.has_best_kernel else "")
        if self.best_speedup and self.best_speedup <= 1.0:
            best += " (slower than eager)"
        return (f"{self.status}: round {self.rounds_done}/{self.rounds_planned}, "
                f"{self.candidates_judged} candidate(s) judged, {self.candidates_passed} passed{best}")

    def summary(self) -> str:
        lines = [f"Job {self.job_id} ({self.problem}) {self.line()}."]
        if self.comparison and (self.has_best_kernel or self.done):
            lines.append(f"{self.comparison.recommendation} {self.comparison.summary}")
        if self.backend_reason:
            lines.append(f"Backend {self.backend} on {self.device}: {self.backend_reason}.")
        if self.error:
            lines.append(f"Error: {self.error}")
        for c in self.recent:
            why = f" ({'; '.join(c.reasons)})" if c.reasons else ""
            speed = f" {c.speedup:.2f}x" if c.speedup else ""
            lines.append(f"- round {c.round} {c.attempt_id} [{c.strategy}]: {c.verdict}{speed}{why}")
        if self.has_best_kernel:
            lines.append("Call best_kernel(job_id) for the best verified kernel's code.")
        elif not self.done:
            lines.append("Not finished: call job_status again (wait_s waits here and reports progress).")
        return "\n".join(lines)


class BestKernel(BaseModel):
    job_id: str
    attempt_id: str
    code: str = Field(description="A complete candidate file defining ModelNew.")
    verdict: str
    speedup: float | None
    strategy: str = ""
    round: int | None = None
    comparison: ComparisonOut | None = Field(None, description=COMPARISON)

    def summary(self) -> str:
        speed = f"{self.speedup:.2f}x over eager" if self.speedup else "no speedup measured"
        # The comparison leads: a kernel slower than eager is handed over, but not as a win.
        head = f"{self.comparison.recommendation} {self.comparison.summary}\n" if self.comparison else ""
        return (f"{head}Best verified kernel of job {self.job_id}: attempt {self.attempt_id} [{self.strategy}], "
                f"{self.verdict}, {speed}.\n\n```python\n{self.code}\n```")


class ProblemInfo(BaseModel):
    name: str = Field(description="Pass this as `reference` to evaluate_kernel or submit_optimization.")
    level: int | None
    input_shapes: list[list[int] | None] | None = None
    constants: dict[str, int | float] = Field(default_factory=dict)
    error: str | None = None


class ProblemList(BaseModel):
    problems: list[ProblemInfo]

    def summary(self) -> str:
        rows = [f"- {p.name}: inputs {p.input_shapes or '?'}" + (f" (unusable: {p.error})" if p.error else "")
                for p in self.problems]
        return f"{len(self.problems)} bundled problem(s):\n" + "\n".join(rows)


class StrategyHits(BaseModel):
    query: str
    results: list[dict[str, Any]] = Field(description="Strategies, best match first, as the knowledge base has them.")

    def summary(self) -> str:
        if not self.results:
            return f"No strategy matches {self.query!r}."
        rows = []
        for i, hit in enumerate(self.results, 1):
            title = hit.get("title") or hit.get("name") or hit.get("id") or "strategy"
            text = hit.get("summary") or hit.get("description") or hit.get("text") or ""
            rows.append(f"{i}. {title}" + (f": {text}" if text else ""))
        return "\n".join(rows)
