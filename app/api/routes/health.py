"""Liveness, readiness (database and broker reachable, probes.py) and
Prometheus metrics (which probe the dependencies too, so a scrape says which
one is down)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel

from ...outages import RETRY_AFTER_S
from ..deps import SettingsDep
from ..errors import error_response, responses
from ..probes import probe

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
    checks = probe(settings)
    failed = [f"{name}: {state}" for name, state in checks.items() if state != "ok"]
    if failed:
        return error_response(request, 503, "not ready: " + "; ".join(failed), failed,
                              headers={"Retry-After": str(RETRY_AFTER_S)})
    return JSONResponse({"status": "ready", **checks})


@router.get("/metrics", summary="Prometheus metrics (text exposition format)", response_class=Response,
            responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}})
def metrics(settings: SettingsDep) -> Response:
    probe(settings)
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
