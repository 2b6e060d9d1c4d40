"""Knowledge base pages: search strategies (hybrid retrieval), and one
strategy with its evidence (the candidates that used it and how they did)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from knowledge_base.facade import UnknownStrategy
from knowledge_base.filters import Filters
from knowledge_base.model import FAMILIES

from ...backends import BACKENDS
from ...deps import SettingsDep
from ...errors import NotFound
from ...kb import knowledge_base
from ..deps import UserAlone
from ..page_route import PageRoute
from ..render import render

router = APIRouter(route_class=PageRoute, include_in_schema=False)


@router.get("/kb")
def kb_search(request: Request, user: UserAlone, settings: SettingsDep,
              q: Annotated[str, Query(max_length=500)] = "",
              family: Annotated[str, Query(max_length=40)] = "",
              backend: Annotated[str, Query(max_length=16)] = "") -> Response:
    kb = knowledge_base(settings.db_url)
    backend = backend if backend in BACKENDS else ""
    filters = {k: v for k, v in {"op_families": [family] if family else None, "backend": backend}.items() if v}
    if q.strip():
        hits = kb.search(q.strip(), 20, filters or None)
    else:  # no query: the most trusted strategies first
        by_backend = Filters.of(backend=backend)
        hits = sorted((kb.show(s.id) for s in kb.store.all()
                       if (not family or family in s.applies_to.get("op_families", [])) and by_backend.matches(s)),
                      key=lambda s: -s["confidence"])[:50]
    return render(request, "kb.html", {"q": q, "family": family, "families": FAMILIES, "backend": backend,
                                       "backends": BACKENDS, "hits": hits, "stats": kb.stats()}, user=user, active="kb")


@router.get("/kb/archive")
def kb_archive(request: Request, user: UserAlone, settings: SettingsDep) -> Response:
    """The best verified kernel per (problem signature, backend, hardware key), speedups labelled by where they
    were measured."""
    entries = sorted(knowledge_base(settings.db_url).store.archive_all(), key=lambda e: (e.problem, e.backend, e.arch))
    return render(request, "kb_archive.html", {"entries": entries}, user=user, active="kb")


@router.get("/kb/{strategy_id}")
def kb_strategy(strategy_id: str, request: Request, user: UserAlone, settings: SettingsDep) -> Response:
    try:
        strategy = knowledge_base(settings.db_url).show(strategy_id)
    except UnknownStrategy as exc:
        raise NotFound(f"no strategy {strategy_id}") from exc
    return render(request, "kb_strategy.html", {"s": strategy}, user=user, active="kb")
