"""Bring a database to the current schema (migrations/, through Alembic): used
by `kforge db upgrade` and `kforge serve`, and by the embedded SQLite setups
(knowledge base, MCP server) that own their file."""

from __future__ import annotations

import threading
from pathlib import Path

from ..settings import get_settings

ROOT = Path(__file__).resolve().parents[2]
# Alembic runs migrations through a module-level context proxy: two upgrades in
# one process at once (the MCP server's tools open the knowledge base from
# worker threads) tear it down under each other ("KeyError: 'script'").
_ONE_AT_A_TIME = threading.Lock()


def upgrade_database(url: str | None = None) -> None:
    with _ONE_AT_A_TIME:
        _upgrade(url)


def _upgrade(url: str | None) -> None:
    from alembic import command
    from alembic.config import Config

    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(ROOT / "migrations"))
    cfg.set_main_option("sqlalchemy.url", url or get_settings().db_url)
    command.upgrade(cfg, "head")
