"""Liveness, readiness (database and broker reachable) and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from ...db.session import engine_for
from ...worker.celery_app import celery_app
from ..deps import SettingsDep

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The process is alive")
def healthz() -> dict:
    return {"status": "ok"}


@router.get("/readyz", summary="Database and broker reachable")
def readyz(settings: SettingsDep) -> JSONResponse:
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
    ok = all(v == "ok" for v in checks.values())
    return JSONResponse({"status": "ready" if ok else "not ready", **checks}, status_code=200 if ok else 503)


@router.get("/metrics", summary="Prometheus metrics")
def metrics() -> Response:
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
