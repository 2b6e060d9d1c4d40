"""Sending jobs to a Redis broker from the event loop. Why: Celery's client
blocks, so the API sent each submission's message in a thread-pool trip, and
its send (producer, kombu channel, a new Redis client per message) cost more
CPU than the submission's INSERT (docs/benchmarks/history/2026-12-01.md, issue 31, third pass).
Here Celery still builds the task message (`amqp.as_task_v2`: its protocol,
its headers) and kombu serialises the body; what is ours is the envelope
kombu's Redis transport keeps in the queue's list, a JSON object with the
base64 body and the delivery properties, pushed with one LPUSH on an asyncio
Redis client (one per event loop). tests/app/service/test_loop_send.py holds
it equal to the envelope Celery's own send writes, and a worker runs a job sent
this way. Other brokers (the embedded SQLite one) keep Celery's send."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import uuid
import weakref
from typing import Any

from kombu.serialization import dumps

from .broker import celery_app

log = logging.getLogger("kforge.jobs")
TASK = "kforge.run_job"


def envelope(job_id: str, queue: str) -> bytes:
    """The message a worker on `queue` takes for `job_id`, as kombu's Redis transport stores it."""
    app = celery_app()
    task_id = str(uuid.uuid4())
    headers, properties, body, _ = app.amqp.as_task_v2(task_id, TASK, args=[job_id], reply_to=app.thread_oid,
                                                       ignore_result=None)
    content_type, content_encoding, data = dumps(body, serializer="json")
    raw = data.encode(content_encoding) if isinstance(data, str) else data
    properties.update(delivery_mode=2, delivery_info={"exchange": "", "routing_key": queue}, priority=0,
                      body_encoding="base64", delivery_tag=str(uuid.uuid4()))
    return json.dumps({"body": base64.b64encode(raw).decode(), "content-encoding": content_encoding,
                       "content-type": content_type, "headers": headers, "properties": properties}).encode()


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Any]] = weakref.WeakKeyDictionary()


def _client(url: str) -> Any:  # a redis.asyncio.Redis, imported lazily
    import redis.asyncio as aioredis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    clients = _clients.setdefault(asyncio.get_running_loop(), {})
    if url not in clients:
        # One retry (a pooled connection Redis closed in a restart), not redis-py's ten with back-off: a
        # submission during an outage answers at once and leaves its job to the reaper.
        clients[url] = aioredis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2,
                                               retry=Retry(NoBackoff(), 1))
    return clients[url]


async def send_on_loop(url: str, queued: list[tuple[str, str]]) -> None:
    """Push each (job id, queue) to Redis at `url`; a broker that cannot be
    reached leaves the job stored and queued for the workers' reaper, as
    `broker.send` does."""
    for job_id, queue in queued:
        try:
            await _client(url).lpush(queue, envelope(job_id, queue))
        except Exception as exc:
            log.warning("could not enqueue job %s now (%s: %s); it stays queued for the reaper", job_id,
                        type(exc).__name__, exc)
