"""The FastAPI application."""

from __future__ import annotations

import time

from fastapi import FastAPI, Request, Response

from .. import web
from . import errors
from .metrics import REQUEST_SECONDS
from .routes import evaluate, health, jobs, kb


def create_app() -> FastAPI:
    app = FastAPI(title="KForge", version="0.1.0",
                  description="Verified GPU kernels from LLM agents. Authenticate with `Authorization: Bearer TOKEN`.")
    errors.install(app)
    app.include_router(jobs.router)
    app.include_router(evaluate.router)
    app.include_router(health.router)
    app.include_router(kb.router)

    @app.middleware("http")
    async def timing(request: Request, call_next) -> Response:  # noqa: ANN001
        started = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        REQUEST_SECONDS.labels(request.method, getattr(route, "path", "unmatched"),
                               str(response.status_code)).observe(time.perf_counter() - started)
        return response

    web.install(app)  # the dashboard: pages at /, /login, /jobs, /submit; assets at /static
    return app


app = create_app()
