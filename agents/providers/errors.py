"""Turning SDK exceptions into our failures and user-facing messages, keys removed.

The openai and anthropic SDKs share one shape (a status error with `status_code`,
`response` and a parsed `body`; a connection error with a time-out subclass),
so one translation serves both. Servers sometimes echo a (masked) key in their
error text, so anything that came from the server is redacted before it can
reach a message or a log.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from agents.providers.base import ProviderError
from agents.providers.retry import Failure, parse_retry_after

# Shapes of vendor keys (sk-..., sk-ant-..., sk-proj-...; Google's AIza...), masked or not.
_KEY_LIKE = re.compile(r"\bsk-[A-Za-z0-9_\-*.]{4,}|\bAIza[A-Za-z0-9_\-*.]{8,}")
_MAX_DETAIL = 300


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every given secret and anything shaped like an API key replaced."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    return _KEY_LIKE.sub("[redacted]", text)


def _server_message(body: Any) -> str | None:
    """The human message in an error body: OpenAI's {"message"} or Anthropic's {"error": {"message"}}."""
    if not isinstance(body, dict):
        return None
    for source in (body.get("error"), body):
        message = source.get("message") if isinstance(source, dict) else None
        if isinstance(message, str):
            return message
    return None


def failure_from_sdk(
    exc: Exception,
    *,
    status_error: type[Exception],
    connection_error: type[Exception],
    timeout_error: type[Exception],
    sdk_error: type[Exception],
    secrets: Iterable[str | None] = (),
) -> Failure | None:
    """Describe an SDK exception as a Failure, or None if it did not come from the SDK (a bug)."""
    if isinstance(exc, status_error):
        response = getattr(exc, "response", None)
        headers = dict(response.headers) if response is not None else {}
        message = _server_message(getattr(exc, "body", None)) or ""
        detail = redact(message, secrets)[:_MAX_DETAIL]
        return Failure(getattr(exc, "status_code", None), detail, parse_retry_after(headers))
    if isinstance(exc, timeout_error):
        return Failure(None, "timed out")
    if isinstance(exc, connection_error):
        return Failure(None, "connection error")
    if isinstance(exc, sdk_error):  # e.g. a reply the SDK could not validate
        return Failure(getattr(exc, "status_code", None), redact(str(exc), secrets)[:_MAX_DETAIL], final=True)
    return None


_FATAL_WORDING = {
    401: "authentication failed for provider {provider} (HTTP 401)",
    403: "permission denied by provider {provider} (HTTP 403)",
    404: "not found at provider {provider} (HTTP 404): check the model name {model!r} and the base URL",
}


def fatal_error(failure: Failure, *, provider: str, model: str, key_hint: str | None = None) -> ProviderError:
    """The error for a failure that retrying will not fix.

    Authentication errors never carry the server's text: that text is where a
    (partly masked) key tends to appear.
    """
    code = failure.status_code
    if code is None:
        template = "unexpected reply from provider {provider}"
    else:
        template = _FATAL_WORDING.get(code, "request rejected by provider {provider} (HTTP {code})")
    message = template.format(provider=provider, model=model, code=code)
    if code in (401, 403):
        if key_hint:
            message += f"; check {key_hint}"
    elif failure.detail:
        message += f": {failure.detail}"
    return ProviderError(message, provider=provider, status_code=code)


def unexpected_reply(provider: str, base_url: str | None, expected: str) -> ProviderError:
    """A 200 that is not what the API returns: usually a base URL that points at something else."""
    where = f" at {_without_credentials(base_url)}" if base_url else ""
    return ProviderError(
        f"unexpected reply from provider {provider}{where}: not {expected}; check the base URL",
        provider=provider,
    )


def _without_credentials(url: str) -> str:
    """`url` without user:password@ and query string, either of which may hold a secret."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return parts._replace(netloc=netloc, query="").geturl()
