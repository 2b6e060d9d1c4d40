"""The dashboard: server-rendered pages (Jinja2, autoescaped), our own CSS and a
few lines of our own JS for live job pages; nothing loaded from elsewhere."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from .render import STATIC
from .routes import auth, batch, jobs, kb, submit


def install(app: FastAPI) -> None:
    for module in (auth, jobs, submit, batch, kb):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
