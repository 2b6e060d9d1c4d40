"""One typed settings object, read from KFORGE_* environment variables and a .env file.

Provider keys keep their vendors' names (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY).
Secrets are SecretStr: they print as '**********' and never reach a sandbox
(the sandbox drivers build their environment from an allowlist).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from .settings_env import DATA_DIR_DEFAULT, ENV_FILE, ENV_PREFIX

# Who writes kernels: the offline engine (no model) or one of agents.providers' SDK
# providers (PROVIDER_NAMES; a test keeps the two lists equal). The CLI, REST, MCP and
# batch take their choices from here.
PROVIDERS: tuple[str, ...] = ("offline", "openai", "anthropic", "gemini")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_file=ENV_FILE, extra="ignore")

    environment: str = "development"
    data_dir: Path = DATA_DIR_DEFAULT
    database_url: str | None = None
    broker_url: str | None = None
    visibility_timeout_s: int = 3600
    heartbeat_s: float = 5.0
    stale_after_s: float = 30.0
    # How long a worker waits out a database or broker outage inside a job before leaving it to be resumed later.
    outage_wait_s: float = Field(default=300.0, ge=0)
    gpu_lock_dir: Path = Path("/tmp")
    provider: str = "offline"
    model: str | None = None
    base_url: str | None = None
    prices_json: str | None = Field(default=None, description="JSON object: model prefix -> [usd_in, usd_out] per 1M")
    sandbox: str = "process"
    device: str = "auto"
    eval_timeout_s: float = 120.0
    memory_mb: int = 4096
    # The REST API. Workers: uvicorn processes of `kforge api` (0: one per core).
    api_workers: int = Field(default=0, ge=0)
    # Threads per API process for database work; at most the connection pool's size (10), so no
    # request waits for, or churns, an overflow connection.
    api_threads: int = Field(default=10, ge=1, le=10)
    # Per API token: sustained requests a second and the burst allowed at once (0 turns limiting off).
    rate_limit_per_s: float = Field(default=50.0, ge=0)
    rate_limit_burst: int = Field(default=200, ge=1)
    # A verified token is remembered this long per process: a revocation takes effect within it.
    auth_cache_s: float = Field(default=10.0, ge=0)
    # PostgreSQL: each API process keeps GET /v1/jobs/{id} answers while it hears every change
    # (LISTEN on the migration's triggers; app/jobs/reading/read_cache.py).
    api_read_cache: bool = True
    # The longest /v1/evaluate may hold a request open waiting for its verdict (wait_s is capped to it).
    api_max_wait_s: float = Field(default=600.0, ge=0)
    # The dashboard's batch pages: a folder of run folders (each the --out of a `kforge batch run`).
    batch_dir: Path | None = None
    cpu_threads: int | None = Field(default=None, ge=1, description="Threads of the cpu backend's kernels and "
                                    "baselines (same for both); unset: the cores the sandbox grants")
    openai_api_key: SecretStr | None = Field(default=None, validation_alias="OPENAI_API_KEY")
    anthropic_api_key: SecretStr | None = Field(default=None, validation_alias="ANTHROPIC_API_KEY")
    gemini_api_key: SecretStr | None = Field(default=None, validation_alias="GEMINI_API_KEY")

    @field_validator("provider")
    @classmethod
    def known_provider(cls, v: str) -> str:
        if v not in PROVIDERS:
            raise ValueError(f"KFORGE_PROVIDER must be one of {', '.join(PROVIDERS)}")
        return v


    @property
    def db_url(self) -> str:
        """Embedded default: a SQLite file in the data dir."""
        return self.database_url or f"sqlite:///{self._data().resolve() / 'kforge.db'}"

    @property
    def queue_url(self) -> str:
        """Embedded default: a broker in a SQLite file (Kombu's SQLAlchemy transport), no server."""
        return self.broker_url or f"sqla+sqlite:///{self._data().resolve() / 'broker.db'}"

    def _data(self) -> Path:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        return self.data_dir


@lru_cache
def get_settings() -> Settings:
    return Settings()
