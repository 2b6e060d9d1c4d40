"""Waiting for a job's final status on the event loop, holding no thread.

Each API process keeps one listener (a `Hub`): a Redis pub/sub subscription
when the broker is Redis, else a Postgres LISTEN connection when the database
is PostgreSQL. A waiter registers for its job, reads the job once, and then
sleeps until the listener wakes it; it re-reads the job now and then anyway
(RECHECK_S, or DOWN_RECHECK_S while the listener is reconnecting), so a lost
message only delays it. With SQLite there is no listener and waiters poll
every POLL_S.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ...settings import Settings
from ..status import TERMINAL
from .notify import CHANNEL, is_redis

log = logging.getLogger("kforge.jobs")
POLL_S = 0.2
RECHECK_S = 5.0
DOWN_RECHECK_S = 1.0


class Hub:
    """Waiters of one event loop, woken by job id."""

    def __init__(self) -> None:
        self.waiters: dict[str, set[asyncio.Event]] = {}
        self.up = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def register(self, job_id: str) -> asyncio.Event:
        event = asyncio.Event()
        self.waiters.setdefault(job_id, set()).add(event)
        return event

    def unregister(self, job_id: str, event: asyncio.Event) -> None:
        events = self.waiters.get(job_id, set())
        events.discard(event)
        if not events:
            self.waiters.pop(job_id, None)

    def wake(self, job_id: str) -> None:
        for event in self.waiters.get(job_id, ()):
            event.set()

    async def run(self, listen: Callable[[Hub], Awaitable[None]]) -> None:
        while True:
            try:
                await listen(self)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("job listener lost (%s: %s); reconnecting", type(exc).__name__, exc)
            self.up.clear()
            for events in self.waiters.values():  # they re-read their job: one may have finished meanwhile
                for event in events:
                    event.set()
            await asyncio.sleep(1.0)


async def listen_redis(url: str, hub: Hub) -> None:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    try:
        async with client.pubsub() as pubsub:
            await pubsub.subscribe(CHANNEL)
            hub.up.set()
            async for message in pubsub.listen():
                if message["type"] == "message":
                    hub.wake(message["data"].decode())
    finally:
        await client.aclose()


async def listen_postgres(url: str, hub: Hub) -> None:
    import psycopg
    from sqlalchemy.engine import make_url

    conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
        await conn.execute(f"LISTEN {CHANNEL}")
        hub.up.set()
        async for note in conn.notifies():
            hub.wake(note.payload)


_HUBS: dict[tuple[asyncio.AbstractEventLoop, str], Hub] = {}


def hub_for(settings: Settings) -> Hub | None:
    """This loop's listener for the settings' broker or database; None when there is none (SQLite)."""
    if is_redis(settings.queue_url):
        url, listen = settings.queue_url, listen_redis
    elif settings.db_url.startswith("postgresql"):
        url, listen = settings.db_url, listen_postgres
    else:
        return None
    loop = asyncio.get_running_loop()
    hub = _HUBS.get((loop, url))
    if hub is None:
        for key in [k for k in _HUBS if k[0].is_closed()]:
            del _HUBS[key]
        hub = _HUBS[(loop, url)] = Hub()
        hub.task = loop.create_task(hub.run(lambda h: listen(url, h)), name="kforge-job-listener")
    return hub


async def wait_finished(settings: Settings, job_id: str, timeout_s: float,
                        read: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any] | None:
    """Wait up to `timeout_s` for the job to be final; returns its last reading
    (`read()`: the job as a dict with a "status"), or None when no time was given."""
    if timeout_s <= 0:
        return None
    deadline = time.monotonic() + timeout_s
    hub = hub_for(settings)
    if hub is not None and not hub.up.is_set():  # subscribed before the first read, or no message is missed
        try:
            await asyncio.wait_for(hub.up.wait(), min(2.0, timeout_s))
        except TimeoutError:
            pass
    event = hub.register(job_id) if hub else None
    try:
        while True:
            current = await read()
            left = deadline - time.monotonic()
            if current["status"] in TERMINAL or left <= 0:
                return current
            if event is None:
                await asyncio.sleep(min(left, POLL_S))
                continue
            try:
                await asyncio.wait_for(event.wait(), min(left, RECHECK_S if hub.up.is_set() else DOWN_RECHECK_S))
            except TimeoutError:
                pass
            event.clear()
    finally:
        if hub is not None and event is not None:
            hub.unregister(job_id, event)
