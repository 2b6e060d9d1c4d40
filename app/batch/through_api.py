"""A batch task through a running KForge API instead of a local search.

The search runs on the service's workers (`POST /v1/jobs`, then `GET
/v1/jobs/{id}` until it is terminal); the final and held-out evaluations go
through `POST /v1/evaluate`. The job id is kept in the task folder (job.json),
so a rerun after an interruption waits for the same job instead of submitting
it again. The baseline cache is not used here: the service's workers time
their own baselines.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx

from sandbox import ProblemError

from ..jobs.status import TERMINAL
from .fit import with_memory_hint
from .heldout import held_out
from .reporting.drift import drift
from .task import FINAL_FIELDS, TaskSpec, base_record, speedups, timed_fields, write_json_atomic

_JOB_FIELDS = ("max_rounds", "candidates_per_round", "max_repairs", "max_cost_usd", "max_tokens", "max_wall_s",
               "target_speedup", "backend")


class Api:
    def __init__(self, base: str, token: str | None, poll_s: float = 2.0) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = httpx.Client(base_url=base.rstrip("/"), headers=headers, timeout=60)
        self.poll_s = poll_s

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        r = self.client.post(path, json=body)
        if r.status_code >= 400:
            raise ValueError(f"POST {path}: HTTP {r.status_code}: {r.text[:500]}")
        return r.json()

    def wait(self, job_id: str) -> dict[str, Any]:
        while True:
            r = self.client.get(f"/v1/jobs/{job_id}")
            if r.status_code >= 400:
                raise ValueError(f"GET /v1/jobs/{job_id}: HTTP {r.status_code}: {r.text[:500]}")
            job = r.json()
            if job["status"] in TERMINAL:
                return job
            time.sleep(self.poll_s)

    def evaluate(self, reference: str, candidate: str, device: str, gpu_kind: str | None) -> dict[str, Any]:
        body = {"reference": reference, "candidate": candidate, "device": device, "gpu_kind": gpu_kind}
        job = self.post("/v1/evaluate", {k: v for k, v in body.items() if v is not None})
        done = self.wait(job["id"])
        if done["status"] != "succeeded" or not done.get("result"):
            raise ProblemError(done.get("error") or f"evaluation {done['status']}")
        return done["result"]


def run_task_service(spec: TaskSpec, base: str, token: str | None, gpu_kind: str | None = None) -> dict[str, Any]:
    out = Path(spec.out)
    started = time.monotonic()
    try:
        record = _run(spec, out, Api(base, token), gpu_kind)
    except (httpx.HTTPError, ValueError, OSError, ProblemError) as exc:
        record = {**base_record(spec), "status": "error", "error": with_memory_hint(str(exc))[:2000],
                  "wall_s": time.monotonic() - started}
        write_json_atomic(out / "error.json", record)
        return record
    write_json_atomic(out / "summary.json", record)
    (out / "error.json").unlink(missing_ok=True)
    return record


def _run(spec: TaskSpec, out: Path, api: Api, gpu_kind: str | None) -> dict[str, Any]:
    reference = Path(spec.problem["path"]).read_text(encoding="utf-8")
    device = spec.options.get("device", "auto")
    job_file = out / "job.json"
    job_id = json.loads(job_file.read_text())["id"] if job_file.exists() else None
    if job_id is None:
        body = {"reference": reference, "name": spec.problem["name"], "provider": spec.provider, "model": spec.model,
                "base_url": spec.base_url, "device": device, "gpu_kind": gpu_kind, **{k: spec.config[k] for k in _JOB_FIELDS}}
        job_id = api.post("/v1/jobs", {k: v for k, v in body.items() if v is not None})["id"]
        write_json_atomic(job_file, {"id": job_id})
    job = api.wait(job_id)
    if job["status"] != "succeeded":
        job_file.unlink(missing_ok=True)  # a rerun submits it again
        raise ValueError(f"job {job_id} {job['status']}: {job.get('error') or ''}".strip())
    result = job.get("result") or {}
    best, usage = result.get("best"), job.get("usage") or result.get("usage") or {}
    evaluated = time.monotonic()
    final = heldout = None
    if best:
        final = api.evaluate(reference, best["code"], device, gpu_kind)
        if spec.held_out and final.get("verdict") == "pass":
            heldout = held_out(lambda r, _n, c: api.evaluate(r, c, device, gpu_kind), reference, spec.problem["name"],
                               best["code"])
        (out / "best.py").write_text(best["code"])
    eval_s = time.monotonic() - evaluated
    search_s = float(result.get("elapsed_s") or 0.0)
    candidates = [c for r in job.get("rounds", []) for c in r.get("candidates", [])]
    return {
        **base_record(spec), "status": "done", "job_id": job_id, "device": (final or {}).get("device"),
        "backend": spec.config.get("backend", "triton"), "timing_label": ((final or {}).get("timing") or {}).get("label"),
        "hardware": None, "correct": bool(final and final.get("verdict") == "pass"), "search_found": bool(best),
        "final": None if final is None else {k: final.get(k) for k in FINAL_FIELDS},
        "drift": drift((best or {}).get("timing") or {}, final.get("timing") or {}) if best and final else None,
        **timed_fields(speedups(final or {}, (final or {}).get("timing") or {})),
        "held_out": heldout,
        "input_tokens": int(usage.get("input_tokens", 0)), "output_tokens": int(usage.get("output_tokens", 0)),
        "cost_usd": float(usage.get("cost_usd", 0.0)),
        "search_wall_s": search_s, "eval_wall_s": eval_s, "wall_s": search_s + eval_s,
        "candidates": len(candidates), "stop_reason": result.get("stop_reason"), "label": result.get("label"),
        "offline": result.get("offline"),
        "best": None if not best else {"id": best.get("id"), "source": best.get("source"),
                                       "strategy": best.get("strategy"), "search_speedup": best.get("speedup")},
        "rounds": job.get("rounds", []), "finished_at": time.time(),
    }
