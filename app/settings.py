"""One typed settings object, read from KFORGE_* environment variables and a .env file.

Provider keys keep their vendors' names (OPENAI_API_KEY, ANTHROPIC_API_KEY).
Secrets are SecretStr: they print as '**********' and never reach a sandbox
(the sandbox drivers build their environment from an allowlist).
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KFORGE_", env_file=".env", extra="ignore")

    environment: str = "development"
    provider: str = "offline"
    model: str | None = None
    base_url: str | None = None
    prices_json: str | None = Field(default=None, description="JSON object: model prefix -> [usd_in, usd_out] per 1M")
    sandbox: str = "process"
    device: str = "auto"
    eval_timeout_s: float = 120.0
    memory_mb: int = 4096
    openai_api_key: SecretStr | None = Field(default=None, validation_alias="OPENAI_API_KEY")
    anthropic_api_key: SecretStr | None = Field(default=None, validation_alias="ANTHROPIC_API_KEY")

    @field_validator("provider")
    @classmethod
    def known_provider(cls, v: str) -> str:
        if v not in ("offline", "openai", "anthropic"):
            raise ValueError("KFORGE_PROVIDER must be offline, openai or anthropic")
        return v


@lru_cache
def get_settings() -> Settings:
    return Settings()
