"""One (problem, sample) of a batch, run inside a worker process.

The search is the one `kforge optimize` runs (`make_search` in app/compose.py),
with the knowledge base as `--kb` says (off; use: retrieved strategies; learn:
also archived winners, and the task's lessons stored), with its trajectory in the task's folder so
a crash resumes where it was. Each worker process keeps one warm judge across
its tasks; on a GPU every evaluation holds the device's lock (the service
workers' lock, `app/gpu_lock.py`), so parallel workers never time at
the same moment on one GPU. Then the best
kernel gets a final evaluation with fresh seeds (its verdict is the task's
`correct`; on a GPU its timing gives both speedups) and a held-out evaluation.
`summary.json`, written atomically and last, marks the task done.
"""

from __future__ import annotations

import atexit
import json
import os
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from agents.providers import ProviderError
from agents.search import SearchConfig, Trajectory
from sandbox import EvalOptions, Judge, JudgeError
from sandbox.options import resolve_device

from ..backends import timed_for_real
from ..compose import guarded, make_search
from ..hardware import cpu_label
from ..kb import knowledge_base
from ..kb.job_lessons import learn
from .fit import with_memory_hint
from .heldout import SCALES, SHRINK_SCALES, held_out, held_out_options
from .reporting.drift import drift
from .reporting.metrics import comparison_of

_JUDGE: Judge | None = None


KB_MODES = ("off", "use", "learn")


@dataclass
class TaskSpec:
    problem: dict[str, Any]  # SuiteProblem.to_dict()
    sample: int
    out: str
    provider: str
    model: str | None
    base_url: str | None
    config: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    held_out: bool = True
    kb: str = "off"  # KB_MODES: off, use (retrieve strategies), learn (retrieve, archive, store lessons)


def write_json_atomic(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


def end_with_parent(parent: int) -> None:
    """Initializer of a batch worker process: it ends with the batch. The kernel
    sends it SIGTERM when the batch process dies, however it dies (a SIGTERM or
    SIGKILL to `kforge batch run` used to leave workers and their sandboxed
    runners behind), and SIGTERM exits through atexit, which closes the warm
    judge and with it the runner."""
    import ctypes
    import signal

    def ended(*_: object) -> None:
        # Not SystemExit: the executor's worker loop catches BaseException from a task, sends it
        # back to a parent that is gone and waits for the next task -- the worker and its runner
        # lived on after `kforge batch run` was killed, still judging. So: the exit functions
        # (the warm judge's close stops the runner and its jobs), then out.
        try:
            atexit._run_exitfuncs()
        finally:
            os._exit(128 + signal.SIGTERM)

    signal.signal(signal.SIGTERM, ended)
    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the batch died before the line above
        ended()


def run_task(spec: TaskSpec) -> dict[str, Any]:
    """Never raises: a failure becomes an `error` record (and error.json, which
    does not mark the task done, so a rerun tries it again)."""
    out = Path(spec.out)
    started = time.monotonic()
    try:
        record = _run(spec, out, started)
    except (JudgeError, ProviderError, ValueError, OSError) as exc:
        return _error(spec, out, str(exc), started)
    except Exception as exc:  # a bug must not take the other tasks down with it
        return _error(spec, out, f"{type(exc).__name__}: {exc}", started, traceback.format_exc())
    write_json_atomic(out / "summary.json", record)
    (out / "error.json").unlink(missing_ok=True)
    return record


def _error(spec: TaskSpec, out: Path, message: str, started: float, trace: str | None = None) -> dict[str, Any]:
    message = with_memory_hint(message)
    record = {**base_record(spec), "status": "error", "error": message[:2000], "wall_s": time.monotonic() - started}
    write_json_atomic(out / "error.json", {**record, "traceback": trace})
    return record


def base_record(spec: TaskSpec) -> dict[str, Any]:
    p = spec.problem
    return {"problem": p["id"], "name": p["name"], "level": p["level"], "sample": spec.sample, "correct": False,
            "scaled": p.get("scaled")}


def evaluator(options: EvalOptions) -> Any:
    """This process's warm judge (started once, reused by every task it runs),
    behind the GPU lock when evaluations run on CUDA."""
    global _JUDGE
    if _JUDGE is None:
        _JUDGE = Judge(warm=True)
        atexit.register(_JUDGE.close)
    if resolve_device(options.device) == "cuda":
        return guarded(_JUDGE, options.device)
    return _JUDGE


def _run(spec: TaskSpec, out: Path, started: float) -> dict[str, Any]:
    reference = Path(spec.problem["path"]).read_text(encoding="utf-8")
    name = spec.problem["name"]
    traj_path = out / "trajectory.json"
    previous = Trajectory.load(traj_path) if traj_path.exists() else None
    seen: dict[str, Any] = {}

    def on_event(event: dict[str, Any]) -> None:
        if event["kind"] == "analysis":
            seen.update(device=event["analysis"].get("device"), hardware=event["analysis"].get("hardware"))

    options = EvalOptions(**spec.options)
    backend = spec.config.get("backend", "triton")
    # The search optimises against eager; torch.compile is timed once, in the final evaluation.
    search_options = replace(options, compile_baseline=False)
    judge = evaluator(options)
    kb = knowledge_base() if spec.kb in ("use", "learn") else None
    search = make_search(judge, search_options, spec.provider, spec.model, spec.base_url, SearchConfig(**spec.config),
                         on_event=on_event, trajectory_path=traj_path, kb=kb, archive=spec.kb == "learn")
    traj = search.run(reference, f"{name}.py", resume=previous)
    if kb is not None and spec.kb == "learn":
        learn(kb, traj, search.analysis, backend, f"batch:{spec.problem['id']}#{spec.sample}", search.provider)
    evaluated = time.monotonic()

    def judge_fn(ref: str, ref_name: str, code: str, opts: EvalOptions = options) -> dict[str, Any]:
        return judge.evaluate(ref, code, ref_name, "best.py", opts).to_json()

    best = traj.best()
    final = timed = None
    if best is not None:
        final, timed = final_evaluation(judge_fn, reference, name, best.code, options, seen, backend)
    heldout = None
    if spec.held_out and final and final["verdict"] == "pass":
        quick = held_out_options(options)
        heldout = held_out(lambda r, n, c: judge_fn(r, n, c, quick), reference, name, best.code,
                           SHRINK_SCALES if spec.problem.get("scaled") else SCALES)
    eval_s = time.monotonic() - evaluated
    if best is not None:
        (out / "best.py").write_text(best.code)
    summary = traj.summary()
    cpu_timed = timed_for_real(backend, seen.get("device")) and seen.get("device") == "cpu"
    return {
        **base_record(spec), "status": "done", "device": seen.get("device"), "backend": backend,
        # On the CPU: the model and the threads the judge timed with (its timing says how many it was granted).
        "hardware": cpu_label(((final or {}).get("timing") or {}).get("threads") or options.threads)
        if cpu_timed else seen.get("hardware"),
        "timing_label": ((final or {}).get("timing") or {}).get("label"),
        "correct": bool(final and final["verdict"] == "pass"),
        "search_found": best is not None,
        "final": None if final is None else {k: final.get(k) for k in FINAL_FIELDS},
        # the best kernel's own time in the search's judgement against the final evaluation's
        "drift": drift(best.timing, (final or {}).get("timing") or {}) if best is not None and final else None,
        **timed_fields(timed),
        "held_out": heldout,
        "comparison": comparison_of({"final": final, "correct": bool(final and final["verdict"] == "pass"),
                                     "best": {"id": best.id} if best else None, **timed_fields(timed)}).to_json(),
        "input_tokens": int(traj.usage["input_tokens"]), "output_tokens": int(traj.usage["output_tokens"]),
        "cost_usd": float(traj.usage["cost_usd"]),
        "search_wall_s": traj.elapsed_s, "eval_wall_s": eval_s, "wall_s": traj.elapsed_s + eval_s,
        "candidates": len(traj.attempts()), "stop_reason": traj.stop_reason, "label": traj.label,
        "offline": traj.offline or None,
        "best": None if best is None else {"id": best.id, "source": best.source, "strategy": best.strategy,
                                            "search_speedup": best.speedup},
        "rounds": summary["rounds"], "finished_at": time.time(),
    }


# What a record keeps of the final evaluation's result (the report's columns read it).
FINAL_FIELDS = ("verdict", "reasons", "timing", "checks", "work", "roofline")


def final_evaluation(judge_fn: Any, reference: str, name: str, code: str, options: EvalOptions, seen: dict[str, Any],
                     backend: str = "triton") -> tuple[dict[str, Any], dict[str, Any]]:
    """Judge the best kernel again with fresh seeds; where timing is real (GPU,
    or native kernels on the CPU) torch.compile is timed too, in the same judge
    run as the kernel (the judge may reuse inductor's compiled code, never a
    timing from another run: issue 26). Returns the result and the speedups."""
    opts = replace(options, compile_baseline=timed_for_real(backend, seen.get("device")))
    result = judge_fn(reference, f"{name}.py", code, opts)
    return result, speedups(result, result.get("timing") or {})


def speedups(result: dict[str, Any], timing: dict[str, Any]) -> dict[str, Any]:
    """The speedups the judge measured (on a GPU, or native kernels on the CPU); none otherwise."""
    if result.get("verdict") != "pass" or not timing.get("speedup_vs_eager"):
        return {"baseline_source": None}
    eager = (timing.get("speedup_vs_eager") or {}).get("value")
    compile_ = (timing.get("speedup_vs_compile") or {}).get("value")
    return {"speedup_eager": eager, "speedup_compile": compile_, "baseline_source": "measured"}


def timed_fields(timed: dict[str, Any] | None) -> dict[str, Any]:
    timed = timed or {}
    return {"speedup_eager": timed.get("speedup_eager"), "speedup_compile": timed.get("speedup_compile"),
            "baseline_source": timed.get("baseline_source")}


def spec_fields(config: SearchConfig, options: EvalOptions) -> tuple[dict[str, Any], dict[str, Any]]:
    return config.to_dict(), asdict(options)
