"""What the tools need from KForge, and the pieces both backends share.

A backend raises our own errors (app.errors, sandbox.JudgeError) with
messages meant for the user; the server turns them into tool errors in one
place (server.tool_errors).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from ..errors import KForgeError
from ..jobs.create import PROBLEMS_DIR, bundled_problem
from .models import BestKernel, Evaluation, JobReport

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
POLL_S = 1.0


class Unavailable(KForgeError):
    """The service could not be reached, or it failed."""

    status_code = 503


@dataclass
class Source:
    """A reference given as source text, or named as a bundled problem."""

    text: str
    filename: str = "reference.py"
    problem: str | None = None

    @classmethod
    def of(cls, reference: str) -> Source:
        # A problem file always spans lines; a single line is a bundled problem's name.
        if "\n" in reference.strip():
            return cls(reference)
        name = reference.strip().removesuffix(".py")
        stem, text = bundled_problem(name)  # BadRequest "no bundled problem named ..." otherwise
        return cls(text, f"{stem}.py", problem=name)


@dataclass
class Submission:
    """submit_optimization's arguments, in the REST API's JobCreate terms."""

    reference: Source
    options: dict[str, Any] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        source = {"problem": self.reference.problem} if self.reference.problem else {"reference": self.reference.text}
        return {**source, **{k: v for k, v in self.options.items() if v is not None}}


class Backend(Protocol):
    name: str

    def start(self) -> None: ...

    async def evaluate(self, reference: Source, candidate: str, device: str | None, gpu_kind: str | None,
                       progress: Progress) -> Evaluation: ...

    async def submit(self, spec: Submission) -> JobReport: ...

    async def job_detail(self, job_id: str) -> dict[str, Any]: ...

    async def best(self, job_id: str) -> BestKernel: ...

    async def search_strategies(self, query: str, k: int, backend: str | None, op_family: str | None,
                                mode: str) -> list[dict[str, Any]]: ...

    async def close(self) -> None: ...


async def follow(backend: Backend, job_id: str, wait_s: float, progress: Progress) -> JobReport:
    """The job's status, after waiting up to ``wait_s`` for it to finish while
    reporting its rounds and candidates as progress."""
    report = JobProgress(progress)
    status = JobReport.of(await backend.job_detail(job_id))
    deadline = time.monotonic() + wait_s
    while not status.done and time.monotonic() < deadline:
        await report(status)
        await anyio.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))
        status = JobReport.of(await backend.job_detail(job_id))
    await report(status)
    return status


class JobProgress:
    """Progress notifications for a job: one per change, their values strictly
    increasing (as MCP requires) and 1.0 only once the job is done."""

    def __init__(self, progress: Progress) -> None:
        self.progress, self.value, self.message = progress, -1.0, ""

    async def __call__(self, status: JobReport) -> None:
        message = status.line()
        if message == self.message or self.value >= 1.0:
            return
        value = 1.0 if status.done else min(0.999, max(status.progress, self.value + 0.001))
        self.value, self.message = value, message
        await self.progress(value, 1.0, message)


def best_from_detail(detail: dict[str, Any], code: str) -> BestKernel:
    attempt = detail["best_attempt_id"]
    cand = next((c for r in detail.get("rounds", []) for c in r["candidates"] if c["attempt_id"] == attempt), {})
    return BestKernel(job_id=detail["id"], attempt_id=attempt, code=code, verdict=cand.get("verdict", "pass"),
                      speedup=cand.get("speedup", detail.get("best_speedup")), strategy=cand.get("strategy", ""),
                      round=cand.get("round"), comparison=detail.get("comparison"))


def problems_dir() -> str:
    return str(PROBLEMS_DIR)
