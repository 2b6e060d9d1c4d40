"""Jinja2 templates (autoescaped) and the one function that turns a template
into a response carrying our security headers."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from ..batch.reporting.text import roof_cell
from . import formatting as fmt
from .security import COOKIE, HEADERS, cookie_authenticated, csrf_token

HERE = Path(__file__).parent
STATIC = HERE / "static"


@lru_cache
def static_url(name: str) -> str:
    """A content hash in the URL, so a changed file is never served stale from a cache."""
    digest = hashlib.sha256((STATIC / name).read_bytes()).hexdigest()[:10]
    return f"/static/{name}?v={digest}"


def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.globals["static_url"] = static_url
    env.filters.update(when=fmt.when, num=fmt.num, speedup=fmt.speedup, spread=fmt.spread, ms=fmt.ms,
                       usd=fmt.usd, short=fmt.short, pct=fmt.pct, stamp=fmt.stamp,
                       sizes=fmt.sizes, roof=roof_cell)
    return env


ENV = _env()


def page_context(request: Request, user: Any | None, active: str = "") -> dict[str, Any]:
    csrf = csrf_token(request.cookies[COOKIE]) if cookie_authenticated(request) else ""
    return {"request": request, "user": user, "csrf": csrf, "active": active}


def render_fragment(name: str, context: dict[str, Any]) -> str:
    return ENV.get_template(name).render(context)


def render(request: Request, name: str, context: dict[str, Any], user: Any | None = None, status_code: int = 200,
           active: str = "") -> HTMLResponse:
    html = render_fragment(name, {**page_context(request, user, active), **context})
    return HTMLResponse(html, status_code=status_code, headers=HEADERS)
