"""Errors mapped to HTTP responses in one place, all with one body (ErrorOut):
our exceptions keep their status and message; validation errors are 422 with
the fields named; Starlette's own (unknown path, unparsable body) keep their
status; a dependency outage (database, broker: app/outages.py) is a 503 with
Retry-After that names the dependency, never a 500; an unexpected error is a
500 without internals (sent by the request middleware, which sees it first)."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from ..errors import KForgeError, RateLimited
from ..outages import BROKER_ERRORS, DATABASE_ERRORS, RETRY_AFTER_S, dependency_down
from ..schemas import ErrorOut
from .metrics import DEPENDENCY_ERRORS

log = logging.getLogger("kforge.api")
WHY = {400: "The body is not the JSON the operation takes", 401: "No valid API token",
       403: "The token's user may not do this", 404: "No such resource visible to this token",
       409: "The resource is not in a state that allows this", 413: "The body is too large",
       422: "The request is invalid; `errors` names each field", 429: "Too many requests for this token; see Retry-After",
       500: "Unexpected error; quote `request_id` when reporting",
       503: "A dependency (database, broker) is unreachable; retry after Retry-After seconds"}
RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer"}}}


def responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the error statuses an operation can answer."""
    return {code: {"model": ErrorOut, "description": WHY[code], **({"headers": RETRY_AFTER} if code in (429, 503) else {})}
            for code in codes}


def error_response(request: Request | None, status: int, detail: str, errors: list[str] | None = None,
                   headers: dict[str, str] | None = None, request_id: str | None = None) -> JSONResponse:
    rid = request_id or (getattr(request.state, "request_id", None) if request is not None else None)
    body = ErrorOut(detail=detail, errors=errors or [], request_id=rid)
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


def unexpected(request_id: str) -> JSONResponse:
    """The answer to an exception nobody mapped (logged by the caller, with its request id)."""
    return error_response(None, 500, "internal error", request_id=request_id)


def outage(request: Request | None, exc: BaseException, request_id: str | None = None) -> JSONResponse | None:
    """503 + Retry-After naming the dependency when `exc` is an outage; None when it is not."""
    down = dependency_down(exc)
    if down is None:
        return None
    DEPENDENCY_ERRORS.labels(down).inc()
    return error_response(request, 503, f"the {down} is unreachable; retry in {RETRY_AFTER_S} s",
                          [f"{down}: unreachable"], headers={"Retry-After": str(RETRY_AFTER_S)}, request_id=request_id)


def kforge_error(request: Request, exc: KForgeError) -> JSONResponse:
    """One of our exceptions as its status and message (the handler below, and app/api/hot_routes.py)."""
    headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else None
    if isinstance(exc, RateLimited):
        headers = {"Retry-After": str(exc.retry_after_s)}
    return error_response(request, exc.status_code, str(exc), headers=headers)


def install(app: FastAPI) -> None:
    @app.exception_handler(KForgeError)
    async def kforge_error_handler(request: Request, exc: KForgeError) -> JSONResponse:
        return kforge_error(request, exc)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            problems.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
        return error_response(request, 422, "; ".join(problems), problems)

    async def unavailable(request: Request, exc: Exception) -> JSONResponse:
        answer = outage(request, exc)
        if answer is None:  # e.g. an IntegrityError: a bug, the middleware's 500
            raise exc
        log.warning("dependency down: %s: %s", type(exc).__name__, exc)
        return answer

    for kind in (*DATABASE_ERRORS, *BROKER_ERRORS):
        app.add_exception_handler(kind, unavailable)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return error_response(request, exc.status_code, str(exc.detail), headers=exc.headers)
