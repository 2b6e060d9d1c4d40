"""One list of providers: what the CLI, REST, MCP and batch accept (app.settings.PROVIDERS)
is the offline engine and exactly the SDK providers agents.providers can build."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agents.providers import PROVIDER_NAMES, make_provider
from app.schemas import JobCreate
from app.settings import PROVIDERS, Settings


def test_the_app_offers_exactly_the_providers_agents_can_build() -> None:
    assert PROVIDERS == ("offline", *PROVIDER_NAMES)
    for name in PROVIDER_NAMES:
        assert make_provider(name, base_url="http://127.0.0.1:9/v1").name == name
        # the key each one is built with (app.compose.build_provider): a secret setting of its own
        assert f"{name}_api_key" in Settings.model_fields


def test_a_job_names_one_of_them_or_is_refused() -> None:
    for name in PROVIDERS:
        assert JobCreate(problem="x", provider=name).provider == name
    with pytest.raises(ValidationError):
        JobCreate(problem="x", provider="cohere")
