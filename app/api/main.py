"""The FastAPI application."""

from __future__ import annotations

import time

from fastapi import FastAPI, Request, Response
from fastapi.responses import HTMLResponse

from . import errors
from .metrics import REQUEST_SECONDS
from .routes import evaluate, health, jobs


def create_app() -> FastAPI:
    app = FastAPI(title="KForge", version="0.1.0",
                  description="Verified GPU kernels from LLM agents. Authenticate with `Authorization: Bearer TOKEN`.")
    errors.install(app)
    app.include_router(jobs.router)
    app.include_router(evaluate.router)
    app.include_router(health.router)

    @app.middleware("http")
    async def timing(request: Request, call_next) -> Response:  # noqa: ANN001
        started = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        REQUEST_SECONDS.labels(request.method, getattr(route, "path", "unmatched"),
                               str(response.status_code)).observe(time.perf_counter() - started)
        return response

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def home() -> str:
        return ("<!doctype html><title>KForge</title><h1>KForge</h1><p>The dashboard is coming. "
                "Meanwhile: <a href='/docs'>API docs</a>, <a href='/readyz'>readiness</a>.</p>")

    return app


app = create_app()
