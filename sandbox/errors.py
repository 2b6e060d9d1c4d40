"""The judge's own exceptions; messages are written for the user."""

from __future__ import annotations

from typing import Any


class JudgeError(Exception):
    """Base class of errors the judge reports to users."""


class ProblemError(JudgeError):
    """The reference (or the request) is unusable: verdict "error", exit 2."""


def error_json(message: str) -> dict[str, Any]:
    """The result of a request the judge could not judge, shaped like a verdict."""
    return {"verdict": "error", "reasons": [message], "correct": False, "speedup": None, "checks": {},
            "check_details": {}}
