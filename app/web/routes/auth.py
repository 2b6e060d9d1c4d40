"""Sign in with an API token (kept in an HttpOnly, SameSite=Strict cookie); sign out."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from ...auth.tokens import authenticate
from ...deps import bearer_token
from ...errors import NotAuthenticated
from ..deps import FormData, WebSession
from ..page_route import PageRoute
from ..render import render
from ..security import check_csrf, check_origin, clear_session_cookie, set_session_cookie

router = APIRouter(route_class=PageRoute, include_in_schema=False)


def safe_next(target: str | None) -> str:
    """Only a path on this site: never `//host` or an absolute URL (an open redirect)."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")) or not target.isprintable():
        return "/jobs"
    return target


@router.get("/login")
def login_form(request: Request, session: WebSession, next: str | None = None) -> Response:
    try:
        authenticate(session, bearer_token(request))
        return RedirectResponse(safe_next(next), status_code=303)  # already signed in
    except NotAuthenticated:
        return render(request, "login.html", {"next": safe_next(next), "error": None})


@router.post("/login")
def login(request: Request, session: WebSession, form: FormData) -> Response:
    check_origin(request)
    token, target = form.get("token", "").strip(), safe_next(form.get("next"))
    try:
        authenticate(session, token)
    except NotAuthenticated:
        return render(request, "login.html", {"next": target, "error": "That token is not valid (or was revoked)."},
                      status_code=401)
    response = RedirectResponse(target, status_code=303)
    set_session_cookie(response, request, token)
    return response


@router.post("/logout")
def logout(request: Request, form: FormData) -> Response:
    check_csrf(request, form)
    response = RedirectResponse("/login", status_code=303)
    clear_session_cookie(response)
    return response
