"""The dashboard's session cookie, CSRF defence and security headers.

CSRF: the session cookie is HttpOnly and SameSite=Strict, so a browser never
attaches it to a request another site starts. Two further checks stand behind
that, for browsers or proxies that get SameSite wrong:

- every form POST must come from our own origin: its `Origin` header (or, when
  absent, its `Referer`) must name this host;
- a form POST authenticated by the cookie must carry a hidden `csrf` field
  equal to a keyed hash of the session token. It needs no server state, differs
  per session, and a page on another origin cannot read it.

A request that authenticates with `Authorization: Bearer` cannot be forged by
another site (a browser does not add that header cross-origin) and skips the
hidden-field check.
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import urlsplit

from fastapi import Request, Response

from ..errors import Forbidden

COOKIE = "kforge_token"
COOKIE_MAX_AGE_S = 30 * 24 * 3600
# Our pages load nothing from elsewhere and run no inline script.
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def csrf_token(session_token: str) -> str:
    """Domain-separated from the token's stored SHA-256, so the page never shows the database's hash."""
    return hmac.new(b"kforge-csrf-v1", session_token.encode(), hashlib.sha256).hexdigest()


def set_session_cookie(response: Response, request: Request, token: str) -> None:
    response.set_cookie(COOKIE, token, max_age=COOKIE_MAX_AGE_S, path="/", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")


def clear_session_cookie(response: Response) -> None:
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")


def cookie_authenticated(request: Request) -> bool:
    return not request.headers.get("authorization") and bool(request.cookies.get(COOKIE))


def check_origin(request: Request) -> None:
    """A POST from a page on another origin is refused; one with neither header (curl) is not a browser's."""
    source = request.headers.get("origin") or request.headers.get("referer")
    if source is None:
        return
    if source == "null" or urlsplit(source).netloc.lower() != request.headers.get("host", "").lower():
        raise Forbidden("cross-site form post refused")


def check_csrf(request: Request, form: dict[str, str]) -> None:
    check_origin(request)
    if cookie_authenticated(request):
        expected = csrf_token(request.cookies[COOKIE])
        if not hmac.compare_digest(form.get("csrf", ""), expected):
            raise Forbidden("the form has expired or did not come from this site: reload the page and try again")
