"""Bring a database to the current schema (migrations/, through Alembic): used
by `kforge db upgrade` and `kforge serve`, and by the embedded SQLite setups
(knowledge base, MCP server) that own their file."""

from __future__ import annotations

from pathlib import Path

from ..settings import get_settings

ROOT = Path(__file__).resolve().parents[2]


def upgrade_database(url: str | None = None) -> None:
    from alembic import command
    from alembic.config import Config

    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(ROOT / "migrations"))
    cfg.set_main_option("sqlalchemy.url", url or get_settings().db_url)
    command.upgrade(cfg, "head")
