"""Dependencies of the dashboard's routes.

The session is function-scoped: it commits before the response is sent, so a
redirect to a new job's page never races the commit, and the job is enqueued
(after commit, as in the API) before the browser follows the redirect.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qsl

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from ..auth.tokens import authenticate
from ..db.models import User
from ..db.session import transaction
from ..deps import SettingsDep, bearer_token, get_session
from ..errors import BadRequest
from ..schemas import MAX_SOURCE

WebSession = Annotated[Session, Depends(get_session, scope="function")]
FORM_LIMIT = 2 * MAX_SOURCE + 64_000


def web_user(session: WebSession, token: Annotated[str, Depends(bearer_token)]) -> User:
    return authenticate(session, token)


WebUser = Annotated[User, Depends(web_user)]


def user_alone(settings: SettingsDep, token: Annotated[str, Depends(bearer_token)]) -> User:
    """The user, authenticated in a transaction of its own that has ended before the page's
    handler runs: for pages that write elsewhere (the knowledge base's store, the same SQLite
    file when embedded) and hold no session of the dashboard's."""
    with transaction(settings.db_url) as session:
        return authenticate(session, token)


UserAlone = Annotated[User, Depends(user_alone)]


async def form_data(request: Request) -> dict[str, str]:
    """An urlencoded form (our forms upload no files), parsed without a multipart dependency."""
    if int(request.headers.get("content-length") or 0) > FORM_LIMIT:
        raise BadRequest("form too large")
    body = await request.body()
    if not body:
        return {}
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        raise BadRequest("expected a form post (application/x-www-form-urlencoded)")
    if len(body) > FORM_LIMIT:
        raise BadRequest("form too large")
    return dict(parse_qsl(body.decode("utf-8", errors="replace"), keep_blank_values=True))


FormData = Annotated[dict[str, str], Depends(form_data)]
