"""Real peers for the dashboard's tests: the service fixtures of
tests/app/service (PostgreSQL, Redis, `kforge api` / `kforge worker` processes)
and Debian's Chromium driven by Playwright (never a downloaded browser)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine
from sqlalchemy.orm import Session

from app.auth.tokens import create_token
from tests.app.service.conftest import pg_url, procs, redis_server, service_env  # noqa: F401  (fixtures)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
SCREENSHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"


def engine_for_test(url: str) -> Engine:
    return create_engine(url.replace("postgresql://", "postgresql+psycopg://"))


def make_token(url: str, name: str, admin: bool = False) -> str:
    """A user's API token, made in this process (the CLI's start-up costs seconds)."""
    engine = engine_for_test(url)
    with Session(engine) as s, s.begin():
        _, token = create_token(s, name, admin=admin)
    engine.dispose()
    return token


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    # A missing browser fails the run rather than skipping it: CI must not pass without the browser tests.
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: bash scripts/test.sh installs it (or: apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()
