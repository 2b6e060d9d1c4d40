"""/v1/kb: the knowledge base's strategies (read for every user, import for admins)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Request
from starlette.concurrency import run_in_threadpool

from knowledge_base.facade import UnknownStrategy

from ...errors import BadRequest, Forbidden, NotFound, TooLarge
from ...kb import knowledge_base
from ...schemas import Text
from ..deps import CurrentUser, RateLimit, SettingsDep
from ..errors import responses

router = APIRouter(prefix="/v1/kb", tags=["knowledge base"], dependencies=[RateLimit],
                   responses=responses(401, 422, 429, 500, 503))
Filter = Annotated[Text | None, Query(max_length=100)]


@router.get("/strategies", summary="Search strategies (hybrid retrieval)")
def search(user: CurrentUser, settings: SettingsDep,
           q: Annotated[Text, Query(min_length=1, max_length=500)],
           k: Annotated[int, Query(ge=1, le=50)] = 10, family: Filter = None, backend: Filter = None,
           mode: Literal["hybrid", "embedding", "keyword"] = "hybrid") -> list[dict]:
    filters = {key: v for key, v in {"op_families": [family] if family else None, "backend": backend}.items() if v}
    return knowledge_base(settings.db_url).search(q, k, filters or None, mode)


@router.get("/strategies/{strategy_id}", responses=responses(404), summary="One strategy with its evidence")
def show(strategy_id: Annotated[Text, Path(max_length=200)], user: CurrentUser,
         settings: SettingsDep) -> dict:
    try:
        return knowledge_base(settings.db_url).show(strategy_id)
    except UnknownStrategy as exc:
        raise NotFound(f"no strategy {strategy_id}") from exc


@router.get("/archive", summary="The archived best kernel per problem signature (code omitted)")
def archive(user: CurrentUser, settings: SettingsDep) -> list[dict]:
    return [{k: v for k, v in e.to_dict().items() if k != "code"}
            for e in knowledge_base(settings.db_url).store.archive_all()]


@router.post("/import", responses=responses(403, 413), summary="Merge a JSONL export (admins only)")
async def import_jsonl(request: Request, user: CurrentUser, settings: SettingsDep) -> dict:
    import tempfile

    if not user.is_admin:
        raise Forbidden("only admins may import into the knowledge base")
    body = await request.body()
    if len(body) > 20 << 20:
        raise TooLarge("the export is larger than 20 MB")
    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl") as f:
        f.write(body)
        f.flush()
        try:
            return {"imported": await run_in_threadpool(knowledge_base(settings.db_url).import_jsonl, f.name)}
        except (ValueError, KeyError) as exc:
            raise BadRequest(f"not a KForge knowledge-base export: {exc}") from exc
