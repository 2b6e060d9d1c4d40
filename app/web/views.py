"""What the job pages show, computed from the service's job detail."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..batch.reporting.roofline_plot import plot_rooflines
from ..db.models import Candidate, Job
from ..jobs.reading import views as svc
from ..jobs.status import LIVE
from .chart import best_speedup_chart

LIVE_STATUSES = LIVE


def check_rows(cand: dict[str, Any]) -> tuple[list[dict[str, str]], list[str]]:
    """Each named check with its outcome and the judge's detail (stored per
    check; for candidates stored before that, a failed check's reason reads
    "name: detail"); reasons naming no check (a malformed reply, the
    reviewer's concerns) come back on their own."""
    details, loose = dict(cand.get("check_details") or {}), []
    for reason in cand["reasons"]:
        name, sep, detail = reason.partition(": ")
        if sep and name in cand["checks"]:
            details[name] = detail
        else:
            loose.append(reason)
    rows = [{"name": n, "outcome": o, "detail": details.get(n, "")} for n, o in cand["checks"].items()]
    return rows, loose


def job_view(job: Job) -> dict[str, Any]:
    detail = svc.job_detail(job)
    candidates = [c for r in detail["rounds"] for c in r["candidates"]]
    for c in candidates:
        c["check_rows"], c["loose_reasons"] = check_rows(c)
        c["compare_to"] = c["parent_id"] or c["repair_of"]
    usage = detail["usage"] or {
        "input_tokens": sum(c["input_tokens"] for c in candidates),
        "output_tokens": sum(c["output_tokens"] for c in candidates),
        "cost_usd": sum(c["cost_usd"] for c in candidates)}
    best = next((c for c in candidates if c["attempt_id"] == detail["best_attempt_id"]), None)
    verdicts = {v: sum(1 for c in candidates if c["verdict"] == v) for v in ("pass", "fail", "error")}
    return {"job": detail, "candidates": candidates, "evaluation": evaluation_rows(detail), "usage": usage,
            "best": best, "comparison": detail["comparison"], "verdicts": verdicts, "device": device_row(detail),
            "chart": best_speedup_chart(detail["rounds"]), "timing_caption": timing_caption(candidates),
            "roofline": roofline_plot(detail),
            "live": detail["status"] in LIVE_STATUSES,
            "version": live_version(job, len(candidates))}


def roofline_plot(detail: dict[str, Any]) -> Markup | None:
    """The best kernel's (an evaluation's: the candidate's) roofline against this machine's
    kept ceilings, as inline SVG built from numbers only (every text in it escaped)."""
    result = detail.get("result") or {}
    roof = result.get("roofline") or (result.get("best") or {}).get("roofline") or {}
    svg = plot_rooflines([(detail["problem_name"], roof)], "kernel, eager and torch.compile against this machine's roofs")
    return Markup(svg) if svg else None  # noqa: S704


def device_row(detail: dict[str, Any]) -> dict[str, str]:
    """What the job runs on, named for what it is: "CPU" and its model, or "GPU"
    and its name, once a worker chose; before that, where it will go."""
    choice = (detail.get("config") or {}).get("backend_choice")
    where = f"queue {detail['queue']}"
    if choice:
        kind = "GPU" if choice.get("device_kind") == "gpu" else "CPU"
        return {"kind": kind, "name": choice.get("device_name") or "", "where": where,
                "reason": choice.get("reason") or ""}
    if detail.get("gpu_kind"):
        return {"kind": "GPU", "name": detail["gpu_kind"], "where": where, "reason": ""}
    if detail["backend"] == "auto":
        return {"kind": "", "name": "chosen by the worker when the job starts", "where": where, "reason": ""}
    # A job from before the worker recorded its choice: only the cpu backend says what it ran on.
    return {"kind": "CPU" if detail["backend"] == "cpu" else "", "name": "", "where": where, "reason": ""}


def timing_caption(candidates: list[dict[str, Any]]) -> str | None:
    """What the speedups shown were measured on, from the judge's own label:
    CPU numbers say so (CPU model, threads) and are never presented as GPU speed."""
    timed = next((c["timing"] for c in candidates if c.get("speedup") is not None and c.get("timing")), None)
    if not timed:
        return None
    label = str(timed.get("label") or "")
    if timed.get("device") == "cpu":
        return (f"CPU timing{': ' + label if label else ''} — wall time of native kernels against eager PyTorch "
                "(and torch.compile) on the same threads; not GPU speed.")
    return f"GPU timing{': ' + label if label else ''}."


def evaluation_rows(detail: dict[str, Any]) -> list[dict[str, str]] | None:
    """An evaluate job has no rounds: its one verdict's checks, with every check's detail."""
    result = detail["result"] or {}
    if detail["kind"] != "evaluate" or "checks" not in result:
        return None
    details = result.get("check_details", {})
    return [{"name": n, "outcome": o, "detail": details.get(n, "")}
            for n, o in result["checks"].items()]


def live_version(job: Job, count: int) -> str:
    """Changes whenever the page would: status, candidates judged, best, runs, cancellation."""
    return f"{job.status}|{count}|{job.best_attempt_id}|{job.runs}|{int(job.cancel_requested)}"


def candidate_count(session: Session, job_id: str) -> int:
    return session.scalar(select(func.count()).select_from(Candidate).where(Candidate.job_id == job_id)) or 0


def candidate(session: Session, job_id: str, attempt_id: str) -> Candidate | None:
    return session.scalar(select(Candidate).where(Candidate.job_id == job_id, Candidate.attempt_id == attempt_id))
