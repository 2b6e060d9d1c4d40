"""Migration 0004 on PostgreSQL: the naive UTC wall times stored before it
become the same instants in `timestamptz`, whatever the session's time zone."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

import psycopg
from alembic import command
from alembic.config import Config

from app.db.migrate import ROOT
from tests.app.service.conftest import PG


def alembic(url: str) -> Config:
    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(ROOT / "migrations"))
    cfg.set_main_option("sqlalchemy.url", url)
    return cfg


def test_existing_rows_keep_their_instant():
    name = f"kforge_test_{secrets.token_hex(4)}"
    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = f"{PG}/{name}"
    try:
        command.upgrade(alembic(url), "0003")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SET TIME ZONE 'America/New_York'")
            conn.execute("INSERT INTO users (name, is_admin, created_at) VALUES ('old', false, '2026-01-02 03:04:05')")
        command.upgrade(alembic(url), "head")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SET TIME ZONE 'Asia/Tokyo'")
            stamp = conn.execute("SELECT created_at FROM users WHERE name = 'old'").fetchone()[0]
        assert stamp == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
        command.downgrade(alembic(url), "0003")
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute("SELECT created_at FROM users").fetchone()[0] == datetime(2026, 1, 2, 3, 4, 5)
    finally:
        with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")
