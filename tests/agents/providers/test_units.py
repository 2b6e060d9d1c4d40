"""Pure pieces of the provider layer: prices, back-off arithmetic, redaction, the retry loop."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from agents.providers import ProviderConfigError, ProviderError, ProviderUnavailable, cost_usd, is_priced, price_for
from agents.providers.calls import check_messages
from agents.providers.errors import redact
from agents.providers.retry import Failure, RetryPolicy, backoff_delay, call_with_retry, parse_retry_after


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4.1-mini", "gpt-4.1-mini"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("claude-opus-4-5-20251101", "claude-opus-4-5"),
        ("claude-3-5-haiku-20241022", "claude-3-5-haiku"),
        ("o4-mini", "o4-mini"),
    ],
)
def test_models_are_priced_by_their_longest_family_prefix(model: str, family: str) -> None:
    assert price_for(model) == price_for(family) is not None


def test_prefix_stops_at_a_separator() -> None:
    assert price_for("gpt-5.5") != price_for("gpt-5")
    assert not is_priced("gpt-5.3-chat-latest")  # not silently priced as gpt-5


def test_cost_is_per_million_tokens() -> None:
    assert cost_usd("gpt-4.1", 1_000_000, 1_000_000) == pytest.approx(2.00 + 8.00)
    assert cost_usd("claude-sonnet-4-6", 2000, 500) == pytest.approx((2000 * 3 + 500 * 15) / 1e6)


def test_unknown_model_costs_nothing_and_says_so() -> None:
    assert cost_usd("llama3.1:70b", 10_000, 10_000) == 0.0
    assert not is_priced("llama3.1:70b")


def test_table_from_settings_extends_and_overrides() -> None:
    table = {"llama3.1": {"input": 0.5, "output": 1.0}, "gpt-4.1": [1.0, 1.0]}
    assert cost_usd("llama3.1:70b", 1_000_000, 0, table) == pytest.approx(0.5)
    assert cost_usd("gpt-4.1-2025-04-14", 1_000_000, 1_000_000, table) == pytest.approx(2.0)
    assert cost_usd("gpt-4.1-mini", 1_000_000, 0, table) == pytest.approx(0.40)  # longer default key still wins


@pytest.mark.parametrize("bad", [{"input": 1}, "cheap", [1], {"input": -1, "output": 1}])
def test_bad_price_entry_is_a_config_error(bad: object) -> None:
    with pytest.raises(ProviderConfigError, match="my-model"):
        cost_usd("my-model", 1, 1, {"my-model": bad})


def test_backoff_grows_exponentially_with_jitter_and_a_ceiling() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=5.0)
    rng = random.Random(0)
    for retry, ceiling in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 5.0), (10, 5.0)]:
        delays = [backoff_delay(policy, retry, None, rng) for _ in range(50)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(set(delays)) > 1


def test_retry_after_wins_but_is_capped() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_retry_after_s=10.0)
    assert backoff_delay(policy, 0, 3.0, random.Random()) == 3.0
    assert backoff_delay(policy, 0, 3600.0, random.Random()) == 10.0


def test_retry_after_headers_are_parsed() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    future = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    waited = parse_retry_after({"retry-after": future})
    assert waited is not None and 25 < waited <= 30
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_only_rate_limits_server_errors_and_no_response_are_transient() -> None:
    transient = [None, 408, 429, 500, 502, 503, 529]
    assert all(Failure(code, "").transient for code in transient)
    assert not any(Failure(code, "").transient for code in [400, 401, 403, 404, 422])
    assert not Failure(None, "reply failed validation", final=True).transient


class Flaky:
    """Raises the given exceptions in turn, then returns "done"."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "done"


class ApiFailure(Exception):
    def __init__(self, status: int | None) -> None:
        self.status = status


def _classify(exc: Exception) -> Failure | None:
    return Failure(exc.status, "boom") if isinstance(exc, ApiFailure) else None


def _run(fn: Flaky, sleeps: list[float], max_retries: int = 3) -> tuple[str, int]:
    return call_with_retry(
        fn,
        provider="p",
        model="m",
        policy=RetryPolicy(max_retries=max_retries, base_delay_s=1.0),
        classify=_classify,
        fatal=lambda f: ProviderError(f"fatal {f.status_code}", status_code=f.status_code),
        sleep=sleeps.append,
        rng=random.Random(0),
    )


def test_retry_loop_sleeps_between_transient_failures() -> None:
    sleeps: list[float] = []
    assert _run(Flaky(ApiFailure(429), ApiFailure(None)), sleeps) == ("done", 3)
    assert len(sleeps) == 2 and 0.5 <= sleeps[0] <= 1.0 and 1.0 <= sleeps[1] <= 2.0


def test_retry_loop_gives_up_after_max_retries() -> None:
    sleeps: list[float] = []
    with pytest.raises(ProviderUnavailable) as info:
        _run(Flaky(*[ApiFailure(502)] * 5), sleeps, max_retries=2)
    assert (info.value.attempts, info.value.status_code, len(sleeps)) == (3, 502, 2)


def test_retry_loop_raises_fatal_at_once_and_lets_bugs_through() -> None:
    sleeps: list[float] = []
    with pytest.raises(ProviderError, match="fatal 400"):
        _run(Flaky(ApiFailure(400)), sleeps)
    with pytest.raises(KeyError):
        _run(Flaky(KeyError("bug")), sleeps)
    assert sleeps == []


def test_redact_removes_given_secrets_and_key_shapes() -> None:
    text = "key sk-proj-abcdef123456 and sk-ant-api03-xyz**** and s3cr3t-token and AIzaSyD-9tSrke72PouQ"
    cleaned = redact(text, ["s3cr3t-token"])
    assert "abcdef" not in cleaned and "api03" not in cleaned and "s3cr3t" not in cleaned and "9tSrke" not in cleaned
    assert cleaned.count("[redacted]") == 4


def test_messages_must_be_user_or_assistant_turns() -> None:
    check_messages([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    with pytest.raises(ValueError, match="message 0"):
        check_messages([{"role": "system", "content": "x"}])
