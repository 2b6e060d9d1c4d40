"""Our own exceptions, each with a message meant for the user; the API maps
them to HTTP responses in one place (app/api/errors.py)."""

from __future__ import annotations


class KForgeError(Exception):
    status_code = 400


class BadRequest(KForgeError):
    status_code = 422


class NotAuthenticated(KForgeError):
    status_code = 401


class Forbidden(KForgeError):
    status_code = 403


class NotFound(KForgeError):
    status_code = 404


class Conflict(KForgeError):
    status_code = 409
