"""The FastAPI application."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
from fastapi import FastAPI

from .. import web
from ..settings import get_settings
from . import errors, hot_routes
from .middleware import RequestContext
from .routes import backends, evaluate, health, jobs, kb


@asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    # Fewer threads than requests in flight: each thread trip then finds the GIL and a pooled connection free.
    anyio.to_thread.current_default_thread_limiter().total_tokens = get_settings().api_threads
    yield


def create_app() -> FastAPI:
    app = FastAPI(title="KForge", version="0.1.0", lifespan=lifespan,
                  description="Verified GPU kernels from LLM agents. Authenticate with `Authorization: Bearer TOKEN`. "
                              "Every error has one body (ErrorOut); every response carries `X-Request-ID`; "
                              "timestamps are RFC 3339 in UTC.")
    errors.install(app)
    app.include_router(jobs.router)
    app.include_router(evaluate.router)
    app.include_router(health.router)
    app.include_router(kb.router)
    app.include_router(backends.router)
    hot_routes.install(app)  # GET /v1/jobs/{id} and POST /v1/jobs past FastAPI's routing (same answers)
    app.add_middleware(RequestContext)
    web.install(app)  # the dashboard: pages at /, /login, /jobs, /submit; assets at /static
    return app


app = create_app()
