"""Retries with exponential back-off for calls to a model API.

The SDKs' own retries are switched off (max_retries=0) so that both vendors
follow one policy, every attempt is logged the same way, and a failure ends as
one of our exceptions. Only transient failures are retried: rate limits (429),
server errors (5xx), a server-side time-out (408), and attempts that got no
response at all (connection error, client time-out). Anything else (400, 401,
404, ...) will fail the same way again, so it is raised at once.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from agents.providers.base import ProviderError, ProviderUnavailable

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait; small values keep tests fast."""

    max_retries: int = 4
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    max_retry_after_s: float = 60.0
    """A server may ask for a long pause; past this we wait this long instead, not forever."""


@dataclass(frozen=True)
class Failure:
    """One failed attempt in SDK-neutral terms; `detail` is already free of secrets."""

    status_code: int | None
    """HTTP status, or None when no response came back."""
    detail: str
    retry_after_s: float | None = None
    final: bool = False
    """Retrying cannot help even without a status, e.g. a reply the SDK could not make sense of."""

    @property
    def transient(self) -> bool:
        code = self.status_code
        return not self.final and (code is None or code in (408, 429) or code >= 500)


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait, from `retry-after-ms` or `retry-after` (seconds or HTTP date)."""
    lowered = {key.lower(): value for key, value in headers.items()}
    try:
        if "retry-after-ms" in lowered:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        value = lowered.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError):
        return None


def backoff_delay(policy: RetryPolicy, retry: int, retry_after_s: float | None, rng: random.Random) -> float:
    """Seconds to wait before retry number `retry` (0-based).

    A server's retry-after wins (capped); otherwise exponential with "equal
    jitter" (half fixed, half random) so that many workers hitting the same
    rate limit do not come back in lockstep.
    """
    if retry_after_s is not None:
        return min(retry_after_s, policy.max_retry_after_s)
    ceiling = min(policy.max_delay_s, policy.base_delay_s * 2.0**retry)
    return ceiling / 2 + rng.uniform(0, ceiling / 2)


def call_with_retry(
    fn: Callable[[], T],
    *,
    provider: str,
    model: str,
    policy: RetryPolicy,
    classify: Callable[[Exception], Failure | None],
    fatal: Callable[[Failure], ProviderError],
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> tuple[T, int]:
    """Run `fn` until it succeeds; return its result and the number of attempts.

    `classify` turns an SDK exception into a Failure (None means "not an API
    failure, a bug": it propagates unchanged); `fatal` builds the error raised
    for a non-transient failure.
    """
    rng = rng or random.Random()
    attempts = 0
    while True:
        attempts += 1
        try:
            return fn(), attempts
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
            if not failure.transient:
                log.warning("%s %s: %s, not retried", provider, model, _describe(failure))
                raise fatal(failure) from None
            if attempts > policy.max_retries:
                raise ProviderUnavailable(
                    f"provider {provider} unavailable after {attempts} attempt(s) (last: {_describe(failure)})",
                    provider=provider,
                    status_code=failure.status_code,
                    attempts=attempts,
                ) from None
            delay = backoff_delay(policy, attempts - 1, failure.retry_after_s, rng)
            log.warning(
                "%s %s: %s, retry %d of %d in %.2f s",
                provider,
                model,
                _describe(failure),
                attempts,
                policy.max_retries,
                delay,
            )
            sleep(delay)


def _describe(failure: Failure) -> str:
    """Short and secret-free: the status when there is one, else what happened."""
    return f"HTTP {failure.status_code}" if failure.status_code is not None else failure.detail
