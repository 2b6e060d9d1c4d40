"""Alembic environment: the URL comes from KForge's settings (or -x url=...)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import engine_from_config, pool

from app.db import models  # noqa: F401  (registers the tables)
from app.db.base import Base
from app.settings import get_settings

config = context.config
url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url") \
    or get_settings().db_url


def run_offline() -> None:
    context.configure(url=url, target_metadata=Base.metadata, literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    engine = engine_from_config({"sqlalchemy.url": url}, prefix="sqlalchemy.", poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
