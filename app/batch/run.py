"""`run_batch`: every (problem, sample) of a suite through the search, across
worker processes, resumable.

Layout of a run folder:

```
DIR/run.json                          what the run is (suite, provider, model, search config)
DIR/problems/<id>/s<k>/trajectory.json  the search, saved after every attempt
DIR/problems/<id>/s<k>/summary.json     written atomically when the task is done
DIR/problems/<id>/s<k>/error.json       the last failure (not done: a rerun tries again)
DIR/report.{json,csv,md,html}
```

A rerun skips tasks with a summary.json; a task that died mid-search resumes
its trajectory. One run at a time per folder (a lock file), so two processes
never write the same task.
"""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.search import SearchConfig
from sandbox import EvalOptions

from .fit import budget_options, fit_suite, with_memory_hint
from .reporting.report import write_reports
from .suite import SuiteProblem, discover
from .task import TaskSpec, end_with_parent, run_task, spec_fields, write_json_atomic

Event = Callable[[dict[str, Any]], None]
# Settings that change what a result means: a rerun into the same folder must keep them.
_IDENTITY = ("provider", "model", "base_url", "config", "device", "sandbox", "held_out", "api", "gpu_kind",
             "fit_memory_gb")


class BatchError(Exception):
    """A batch request that cannot run; the message is for the user."""


@dataclass
class BatchRequest:
    suite: Path
    out: Path
    provider: str = "offline"
    model: str | None = None
    base_url: str | None = None
    level: int | None = None
    pattern: str | None = None
    samples: int = 1
    workers: int = 1
    config: SearchConfig = field(default_factory=SearchConfig)
    options: EvalOptions = field(default_factory=EvalOptions)
    held_out: bool = True
    api: str | None = None
    token: str | None = None
    gpu_kind: str | None = None  # --api only: the service queues the jobs on gpu-<kind>
    fit_memory_gb: float | None = None  # scale sizes until one call's inputs and outputs fit (fit.py)
    kb: str = "off"  # the knowledge base: off, use (retrieve strategies), learn (and archive, store lessons)

    def identity(self) -> dict[str, Any]:
        return {"suite": str(Path(self.suite).resolve()), "provider": self.provider, "model": self.model,
                "base_url": self.base_url, "config": self.config.to_dict(), "device": self.options.device,
                "sandbox": self.options.sandbox, "held_out": self.held_out, "api": self.api,
                "gpu_kind": self.gpu_kind, "fit_memory_gb": self.fit_memory_gb}


def task_dir(out: Path, problem_id: str, sample: int) -> Path:
    return out / "problems" / problem_id / f"s{sample}"


def load_record(out: Path, problem: SuiteProblem, sample: int) -> dict[str, Any] | None:
    """The task's summary (done), its last error, or None (never run)."""
    folder = task_dir(out, problem.id, sample)
    for name in ("summary.json", "error.json"):
        try:
            return json.loads((folder / name).read_text())
        except (OSError, ValueError):
            continue
    return None


@contextmanager
def run_lock(out: Path) -> Iterator[None]:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".batch.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise BatchError(f"{out}: another batch is running in this folder") from exc
        yield


def check_identity(req: BatchRequest) -> None:
    path = req.out / "run.json"
    now = req.identity()
    if path.exists():
        before = json.loads(path.read_text())
        changed = [k for k in _IDENTITY if before.get(k) != now.get(k)]
        if changed:
            raise BatchError(f"{req.out} holds a run with other settings ({', '.join(changed)}): "
                             "rerun with the same settings to resume, or choose another --out")
    write_json_atomic(path, now)


def error_record(problem: SuiteProblem, sample: int, message: str) -> dict[str, Any]:
    return {"problem": problem.id, "name": problem.name, "level": problem.level, "sample": sample,
            "status": "error", "correct": False, "error": message}


def run_batch(req: BatchRequest, on_event: Event | None = None) -> dict[str, Any]:
    """Run what is not done yet, then write the reports over every selected task."""
    emit = on_event or (lambda e: None)
    if req.samples < 1 or req.workers < 1:
        raise BatchError("--samples and --workers must be at least 1")
    problems = discover(req.suite, req.level, req.pattern)
    if not problems:
        raise BatchError(f"{req.suite}: no problems match (level={req.level}, problems={req.pattern!r})")
    if req.fit_memory_gb is not None:
        req.options = budget_options(req.options, req.fit_memory_gb)
    with run_lock(req.out):
        check_identity(req)
        pairs = [(p, k) for p in problems for k in range(req.samples)]
        records: dict[tuple[str, int], dict[str, Any]] = {}
        todo = []
        for p, k in pairs:
            found = load_record(req.out, p, k)
            if p.error:
                records[p.id, k] = error_record(p, k, f"the reference is unusable: {p.error}")
            elif found and found.get("status") == "done":
                records[p.id, k] = found
            else:
                todo.append((p, k))
        emit({"kind": "start", "total": len(pairs), "done": len(records), "todo": len(todo),
              "passed": sum(bool(r.get("correct")) for r in records.values())})
        fits = fit_suite(req.out, list({p.id: p for p, _ in todo}.values()), req.fit_memory_gb, req.options)
        for p, k in [t for t in todo if isinstance(fits.get(t[0].id), str)]:
            records[p.id, k] = error_record(p, k, str(fits[p.id]))
        todo = [t for t in todo if not isinstance(fits.get(t[0].id), str)]
        if todo:
            _run_tasks(req, todo, records, emit, {k: v for k, v in fits.items() if isinstance(v, dict)})
        ordered = [records[p.id, k] for p, k in pairs]
        report = write_reports(req.out, ordered, req.identity() | {"samples": req.samples, "kb": req.kb})
    emit({"kind": "report", "report": report})
    return report


def _run_tasks(req: BatchRequest, todo: list[tuple[SuiteProblem, int]],
               records: dict[tuple[str, int], dict[str, Any]], emit: Event,
               fitted: dict[str, dict[str, Any]]) -> None:
    pool = _executor(req)
    try:
        futures = {pool.submit(*_task(req, p, k, fitted.get(p.id))): (p, k) for p, k in todo}
        for fut in as_completed(futures):
            p, k = futures[fut]
            try:
                records[p.id, k] = fut.result()
            except Exception as exc:  # the worker process itself died (e.g. killed for memory)
                records[p.id, k] = error_record(p, k, with_memory_hint(
                    f"worker process failed: {type(exc).__name__}: {exc}"))
            emit({"kind": "finished", "record": records[p.id, k]})
    except BaseException:
        # Interrupted: what finished is saved; a rerun resumes the rest.
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()


def _executor(req: BatchRequest) -> Executor:
    if req.api:
        return ThreadPoolExecutor(max_workers=req.workers)  # the service does the work; we only wait
    # spawn: a fresh interpreter per worker, nothing inherited from this process's threads.
    return ProcessPoolExecutor(max_workers=req.workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=end_with_parent, initargs=(os.getpid(),))


def _task(req: BatchRequest, problem: SuiteProblem, sample: int, fitted: dict[str, Any] | None) -> tuple[Any, ...]:
    config, options = spec_fields(req.config, req.options)
    spec = TaskSpec(problem={**problem.to_dict(), **(fitted or {})}, sample=sample,
                    out=str(task_dir(req.out, problem.id, sample)),
                    provider=req.provider, model=req.model, base_url=req.base_url, config=config, options=options,
                    held_out=req.held_out, kb=req.kb)
    if req.api:
        from .through_api import run_task_service

        return run_task_service, spec, req.api, req.token, req.gpu_kind
    return run_task, spec


def collect_records(out: Path) -> list[dict[str, Any]]:
    """Every task record found in a run folder (done or failed), for `kforge batch report`."""
    records = []
    for folder in sorted((out / "problems").rglob("s*")):
        if not folder.is_dir() or not folder.name[1:].isdigit():
            continue
        for name in ("summary.json", "error.json"):
            try:
                records.append(json.loads((folder / name).read_text()))
                break
            except (OSError, ValueError):
                continue
    return records


def rewrite_reports(out: Path) -> dict[str, Any]:
    try:
        run = json.loads((out / "run.json").read_text())
    except (OSError, ValueError) as exc:
        raise BatchError(f"{out}: not a batch run folder (no readable run.json)") from exc
    records = collect_records(out)
    if not records:
        raise BatchError(f"{out}: no finished task yet")
    return write_reports(out, records, run)
