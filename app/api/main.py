"""The FastAPI application."""

from __future__ import annotations

from fastapi import FastAPI

from .. import web
from . import errors
from .middleware import RequestContext
from .routes import evaluate, health, jobs, kb


def create_app() -> FastAPI:
    app = FastAPI(title="KForge", version="0.1.0",
                  description="Verified GPU kernels from LLM agents. Authenticate with `Authorization: Bearer TOKEN`. "
                              "Every error has one body (ErrorOut); every response carries `X-Request-ID`; "
                              "timestamps are RFC 3339 in UTC.")
    errors.install(app)
    app.include_router(jobs.router)
    app.include_router(evaluate.router)
    app.include_router(health.router)
    app.include_router(kb.router)
    app.add_middleware(RequestContext)
    web.install(app)  # the dashboard: pages at /, /login, /jobs, /submit; assets at /static
    return app


app = create_app()
