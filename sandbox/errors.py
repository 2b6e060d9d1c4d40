"""The judge's own exceptions; messages are written for the user."""

from __future__ import annotations


class JudgeError(Exception):
    """Base class of errors the judge reports to users."""


class ProblemError(JudgeError):
    """The reference (or the request) is unusable: verdict "error", exit 2."""
