"""/v1/backends: the kernel backends a job may ask for (agents/backends.py's list)."""

from __future__ import annotations

from fastapi import APIRouter

from ...backends import backend_list
from ...schemas import BackendsOut
from ..deps import CurrentUser, RateLimit
from ..errors import responses

router = APIRouter(prefix="/v1/backends", tags=["backends"], dependencies=[RateLimit],
                   responses=responses(401, 429, 500, 503))


@router.get("", summary="The kernel backends: what each writes and where it runs; the choices a job takes")
def list_backends(user: CurrentUser) -> BackendsOut:
    return BackendsOut(**backend_list())
