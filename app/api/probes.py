"""Is each dependency reachable? One quick probe each (a `SELECT 1`; a PING,
or a connection to a broker that is not Redis), used by /readyz and /metrics;
every probe sets the `kforge_dependency_up` gauge, so a scrape says which
dependency is down."""

from __future__ import annotations

from sqlalchemy import text

from ..db.session import engine_for
from ..jobs.reading.notify import is_redis
from ..jobs.sending.broker import celery_app
from ..settings import Settings
from .metrics import DEPENDENCY_UP

TIMEOUT_S = 2


def database(url: str) -> None:
    with engine_for(url).connect() as conn:
        conn.execute(text("SELECT 1"))


def broker(url: str) -> None:
    if is_redis(url):
        import redis

        client = redis.Redis.from_url(url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S)
        try:
            client.ping()
        finally:
            client.close()
        return
    with celery_app().connection_for_write() as conn:
        conn.ensure_connection(max_retries=0, timeout=TIMEOUT_S)


def probe(settings: Settings) -> dict[str, str]:
    """{"database": "ok" | "unreachable: Error", "broker": ...}."""
    states = {}
    for name, check, url in (("database", database, settings.db_url), ("broker", broker, settings.queue_url)):
        try:
            check(url)
            states[name] = "ok"
        except Exception as exc:
            states[name] = f"unreachable: {type(exc).__name__}"
        DEPENDENCY_UP.labels(name).set(1 if states[name] == "ok" else 0)
    return states
