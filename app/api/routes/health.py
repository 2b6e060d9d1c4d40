"""Liveness, readiness (database and broker reachable) and Prometheus metrics."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel
from sqlalchemy import text

from ...db.session import engine_for
from ...jobs.broker import celery_app
from ..deps import SettingsDep
from ..errors import error_response, responses

router = APIRouter(tags=["health"], responses=responses(500))


class Alive(BaseModel):
    status: Literal["ok"]


class Ready(BaseModel):
    status: Literal["ready"]
    database: Literal["ok"]
    broker: Literal["ok"]


@router.get("/healthz", response_model=Alive, summary="The process is alive")
def healthz() -> dict:
    return {"status": "ok"}


@router.get("/readyz", response_model=Ready, responses=responses(503), summary="Database and broker reachable")
def readyz(request: Request, settings: SettingsDep) -> JSONResponse:
    checks = {}
    try:
        with engine_for(settings.db_url).connect() as conn:
            conn.execute(text("SELECT 1"))
        checks["database"] = "ok"
    except Exception as exc:
        checks["database"] = f"unreachable: {type(exc).__name__}"
    try:
        with celery_app().connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=3)
        checks["broker"] = "ok"
    except Exception as exc:
        checks["broker"] = f"unreachable: {type(exc).__name__}"
    failed = [f"{name}: {state}" for name, state in checks.items() if state != "ok"]
    if failed:
        return error_response(request, 503, "not ready: " + "; ".join(failed), failed)
    return JSONResponse({"status": "ready", **checks})


@router.get("/metrics", summary="Prometheus metrics (text exposition format)", response_class=Response,
            responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}})
def metrics() -> Response:
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
