"""The remote backend: a KForge service reached over its REST API with a token.

Evaluations are jobs of kind "evaluate": POST /v1/evaluate waits a few
seconds for the verdict, then GET /v1/jobs/{id} is polled (reporting
progress) until a worker has judged it.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import httpx

from ..errors import BadRequest, Conflict, KForgeError, NotAuthenticated, NotFound
from .backend import POLL_S, Progress, Source, Submission, Unavailable, best_from_detail
from .knowledge import KnowledgeUnavailable
from .models import TERMINAL, BestKernel, Evaluation, JobReport

FIRST_WAIT_S = 3.0      # wait_s of POST /v1/evaluate; polling (with progress) takes over after it
EVAL_LIMIT_S = 900.0    # give up on a verdict after this long (the job goes on; job_status follows it)
_BY_STATUS: dict[int, type[KForgeError]] = {401: NotAuthenticated, 404: NotFound, 409: Conflict, 422: BadRequest}


class RemoteBackend:
    name = "remote"

    def __init__(self, url: str, token: str, client: httpx.AsyncClient | None = None) -> None:
        self.url = url.rstrip("/")
        self.client = client or httpx.AsyncClient(base_url=self.url, headers={"Authorization": f"Bearer {token}"},
                                                  timeout=httpx.Timeout(30.0, connect=10.0))

    def start(self) -> None:
        """Nothing to prepare: the service is checked by the first call."""

    async def close(self) -> None:
        await self.client.aclose()

    async def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = await self.client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise Unavailable(f"cannot reach the KForge service at {self.url}: {type(exc).__name__}: {exc}") from exc
        if response.status_code < 400:
            return response
        try:
            detail = response.json().get("detail") or response.text
        except ValueError:
            detail = response.text[:500]
        if response.status_code == 401:
            raise NotAuthenticated(f"the KForge service at {self.url} refused the token: {detail}")
        raise _BY_STATUS.get(response.status_code, Unavailable)(
            detail if response.status_code < 500 else f"the KForge service failed ({response.status_code}): {detail}")

    async def evaluate(self, reference: Source, candidate: str, device: str | None, gpu_kind: str | None,
                       progress: Progress) -> Evaluation:
        body = {"reference": reference.text, "candidate": candidate, "device": device, "gpu_kind": gpu_kind,
                "wait_s": FIRST_WAIT_S}
        await progress(0, None, f"submitted to {self.url}")
        started = time.monotonic()
        job = (await self._call("POST", "/v1/evaluate", json={k: v for k, v in body.items() if v is not None},
                                timeout=FIRST_WAIT_S + 30)).json()
        ticks = 0
        while job["status"] not in TERMINAL:
            if time.monotonic() - started > EVAL_LIMIT_S:
                raise Unavailable(f"no verdict after {EVAL_LIMIT_S:.0f} s: evaluation job {job['id']} is still "
                                  f"{job['status']} (is a worker running for its queue?); follow it with job_status")
            ticks += 1
            await progress(ticks, None, f"{job['status']}: {time.monotonic() - started:.0f} s (job {job['id']})")
            await anyio.sleep(POLL_S)
            job = (await self._call("GET", f"/v1/jobs/{job['id']}")).json()
        if job["status"] != "succeeded" or not job.get("result"):
            raise Unavailable(f"evaluation job {job['id']} {job['status']}: {job.get('error') or 'no result'}")
        return Evaluation.of(job["result"], job_id=job["id"])

    async def submit(self, spec: Submission) -> JobReport:
        created = (await self._call("POST", "/v1/jobs", json=spec.body())).json()
        return JobReport.of({**created, "config": {"max_rounds": spec.options.get("max_rounds", 3)}, "rounds": []})

    async def job_detail(self, job_id: str) -> dict[str, Any]:
        return (await self._call("GET", f"/v1/jobs/{job_id}")).json()

    async def best(self, job_id: str) -> BestKernel:
        detail = await self.job_detail(job_id)
        if detail.get("best_attempt_id") is None:
            raise NotFound(f"job {job_id} has no verified kernel" + ("" if detail["status"] in TERMINAL else
                                                                      f" yet (it is {detail['status']})"))
        code = (await self._call("GET", f"/v1/jobs/{job_id}/best")).text
        return best_from_detail(detail, code)

    async def search_strategies(self, query: str, k: int, backend: str | None, op_family: str | None,
                                mode: str) -> list[dict[str, Any]]:
        params = {"q": query, "k": k, "backend": backend, "family": op_family, "mode": mode}
        try:
            response = await self._call("GET", "/v1/kb/strategies",
                                        params={key: v for key, v in params.items() if v is not None})
        except NotFound as exc:  # a service from before the knowledge base
            raise KnowledgeUnavailable(f"the knowledge base is not available on the service at {self.url}") from exc
        return response.json()
