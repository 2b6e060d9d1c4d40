"""Celery's consumer, reconnecting to the broker within a second of its
return. Kombu's default waits 2, 4, 6 ... up to 30 s between attempts, so a
worker could sit idle half a minute after Redis came back; one attempt a
second costs nothing against a local broker."""

from __future__ import annotations

from functools import partial

from celery.worker.consumer import Consumer
from kombu import Connection

RETRY = {"interval_start": 0.5, "interval_step": 0.5, "interval_max": 1.0}


class QuickReconnect(Consumer):
    def ensure_connected(self, conn: Connection) -> Connection:
        conn.ensure_connection = partial(conn.ensure_connection, **RETRY)  # type: ignore[method-assign]
        return super().ensure_connected(conn)
