"""The two busiest routes, `GET /v1/jobs/{id}` and `POST /v1/jobs`, answered
without FastAPI's routing, dependency solving and response validation: under
load those cost more CPU than the work (docs/benchmarks/history/2026-12-01.md, issue 31, third
pass). The answer is made by the same functions the FastAPI routes call
(`caller`: rate limit, token, unit of work; `job_detail_model`; `submit_job`),
serialised as FastAPI serialises a `response_model`, errors through the same
mapping (app/api/errors.py); outages go on to the request middleware, which
answers them as the exception handlers do (503). The FastAPI routes stay: they
publish /openapi.json, and a request this path does not take (another
content type, a body that is not valid JSON or not a valid JobCreate: their
422s are FastAPI's) is handed to them as it came."""

from __future__ import annotations

import inspect
import json

from fastapi import FastAPI
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import deps
from ..errors import KForgeError
from ..jobs.create import JOBS_SUBMITTED, submit_job
from ..jobs.reading import core_views
from ..jobs.reading.read_cache import cache_for
from ..schemas import JobCreate, JobOut
from ..settings import Settings
from .deps import caller
from .errors import kforge_error
from .routes import jobs

PREFIX = "/v1/jobs"


class HotRoutes:
    def __init__(self, app: ASGIApp, api: FastAPI) -> None:
        self.app, self.api = app, api
        self.routes: dict[tuple[str, str], APIRoute] = {}

    def route(self, method: str, path: str) -> APIRoute:
        """The FastAPI route this path stands in for (the request metrics label requests by its path)."""
        if not self.routes:
            self.routes = {(m, r.path): r for r in jobs.router.routes if isinstance(r, APIRoute) for m in r.methods}
        return self.routes[(method, path)]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            method, path = scope["method"], scope["path"]
            if method == "GET" and path.startswith(PREFIX + "/"):
                job_id = path[len(PREFIX) + 1:]
                if job_id and "/" not in job_id:
                    await self.read(scope, receive, send, job_id)
                    return
            elif method == "POST" and path == PREFIX:
                await self.submit(scope, receive, send)
                return
        await self.app(scope, receive, send)

    async def settings(self) -> Settings:
        """The one settings dependency, as FastAPI would resolve it (tests override it)."""
        got = self.api.dependency_overrides.get(deps.settings, deps.settings)()
        return await got if inspect.isawaitable(got) else got

    async def read(self, scope: Scope, receive: Receive, send: Send, job_id: str) -> None:
        scope["route"] = self.route("GET", PREFIX + "/{job_id}")
        request = Request(scope, receive)
        settings = await self.settings()
        try:
            who = await caller(request, settings)
            cache = cache_for(settings)
            kept = cache.get(job_id) if cache else None
            if kept is not None and (kept[0] == who.user.id or who.user.is_admin):
                await _body(kept[1], 200)(scope, receive, send)
                return
            started = cache.begin() if cache else 0
            owner_id, detail = await core_views.owned_job_detail(who.db.rows_many, who.user, job_id)
        except KForgeError as exc:
            await kforge_error(request, exc)(scope, receive, send)
            return
        answer = _json(detail, 200)
        if cache is not None:
            cache.put(job_id, started, owner_id, bytes(answer.body))
        await answer(scope, receive, send)

    async def submit(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        body = await request.body()
        spec = _job_create(request, body)
        if spec is None:  # FastAPI's route answers it (its 422 and the order of its checks)
            await self.app(scope, _replay(body, receive), send)
            return
        scope["route"] = self.route("POST", PREFIX)
        try:
            who = await caller(request, await self.settings())
            out = await submit_job(who.db, who.user, spec)
        except KForgeError as exc:
            await kforge_error(request, exc)(scope, receive, send)
            return
        JOBS_SUBMITTED.labels(kind="optimize", queue=out["queue"]).inc()
        await _json(JobOut.model_validate(out), 201)(scope, receive, send)


def _job_create(request: Request, body: bytes) -> JobCreate | None:
    """The body as a valid JobCreate, or None for anything FastAPI would answer differently."""
    if request.headers.get("content-type", "").strip().lower() != "application/json":
        return None
    try:
        return JobCreate.model_validate(json.loads(body))
    except (ValueError, RecursionError, ValidationError):  # json's errors are ValueErrors
        return None


def _json(model: BaseModel, status: int) -> Response:
    """As FastAPI sends a `response_model`: pydantic's JSON of the validated model (by alias)."""
    return _body(model.model_dump_json(by_alias=True).encode(), status)


def _body(body: bytes, status: int) -> Response:
    return Response(body, status_code=status, media_type="application/json")


def _replay(body: bytes, receive: Receive) -> Receive:
    """`receive` with the body already read handed out again first."""
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

    async def again() -> Message:
        return pending.pop() if pending else await receive()

    return again


def install(app: FastAPI) -> None:
    """Inside the request middleware (ids, metrics, the access log, outages), outside FastAPI's router."""
    app.add_middleware(HotRoutes, api=app)
