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


class RateLimited(KForgeError):
    status_code = 429

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class TooLarge(KForgeError):
    status_code = 413
