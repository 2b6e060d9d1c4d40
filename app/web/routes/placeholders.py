"""Pages that arrive with their features: the knowledge base."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from ..deps import WebUser
from ..render import render
from ..routing import PageRoute

router = APIRouter(route_class=PageRoute, include_in_schema=False)


@router.get("/kb")
def knowledge_base(request: Request, user: WebUser) -> Response:
    return render(request, "placeholder.html", {
        "title": "Knowledge base",
        "text": "Strategies learned from runs, with their evidence and a search, arrive with the knowledge base."},
        user=user, active="kb")
