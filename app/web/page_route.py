"""A route class for pages: our errors become HTML pages (or a redirect to the
login page), not the API's JSON bodies; JSON endpoints of the pages (asked with
`Accept: application/json`) keep JSON errors."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import quote

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from fastapi.routing import APIRoute

from ..errors import KForgeError, NotAuthenticated
from ..outages import RETRY_AFTER_S, dependency_down
from .render import render
from .security import HEADERS

log = logging.getLogger("kforge.web")
TITLES = {401: "Sign in needed", 403: "Refused", 404: "Not found", 409: "Conflict", 422: "Invalid request",
          500: "Something went wrong", 503: "Try again shortly"}


def login_redirect(request: Request) -> RedirectResponse:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)


def error_page(request: Request, status: int, message: str) -> Response:
    if "application/json" in request.headers.get("accept", ""):
        return JSONResponse({"detail": message}, status_code=status)
    return render(request, "error.html", {"status": status, "title": TITLES.get(status, "Error"), "message": message},
                  status_code=status)


class PageRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def page_handler(request: Request) -> Response:
            try:
                response = await handler(request)
            except NotAuthenticated as exc:
                wants_json = "application/json" in request.headers.get("accept", "")
                response = error_page(request, 401, str(exc)) if wants_json else login_redirect(request)
            except KForgeError as exc:
                response = error_page(request, exc.status_code, str(exc))
            except RequestValidationError as exc:
                where = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in exc.errors())
                response = error_page(request, 422, where)
            except Exception as exc:
                down = dependency_down(exc)
                if down is None:
                    log.exception("page %s failed", request.url.path)
                    response = error_page(request, 500, "internal error")
                else:  # an outage, not a bug: say so, and when to retry
                    log.warning("page %s: the %s is unreachable", request.url.path, down)
                    response = error_page(request, 503, f"the {down} is unreachable; retry in {RETRY_AFTER_S} s")
                    response.headers["Retry-After"] = str(RETRY_AFTER_S)
            for key, value in HEADERS.items():
                response.headers.setdefault(key, value)
            return response

        return page_handler
