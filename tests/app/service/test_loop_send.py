"""A job sent from the event loop (app/jobs/sending/loop_send.py) lands in Redis as the
message Celery's own send writes: the same envelope, headers, properties and
body, only the ids fresh; an unreachable Redis costs the sender nothing. (That
a worker runs jobs sent this way: every API submission on PostgreSQL + Redis
is sent so, e.g. tests/app/service/test_worker_recovery.py.)"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from app.jobs.sending.broker import celery_app, enqueue
from app.jobs.sending.loop_send import send_on_loop
from app.settings import get_settings

JOB = "11111111-2222-4333-8444-555555555555"
FRESH = {("headers", "id"), ("headers", "root_id"), ("properties", "correlation_id"), ("properties", "delivery_tag")}


@pytest.fixture
def broker(redis_server, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:  # noqa: ANN001
    monkeypatch.setenv("KFORGE_BROKER_URL", redis_server.url)
    get_settings.cache_clear()
    celery_app.cache_clear()
    yield redis_server.url
    get_settings.cache_clear()
    celery_app.cache_clear()


def differences(a: dict[str, Any], b: dict[str, Any], path: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    if a.keys() != b.keys():
        return {path + ("keys",)}
    out: set[tuple[str, ...]] = set()
    for key in a:
        if isinstance(a[key], dict) and isinstance(b[key], dict):
            out |= differences(a[key], b[key], path + (key,))
        elif a[key] != b[key]:
            out.add(path + (key,))
    return out


def test_the_message_is_the_one_celery_sends(broker: str) -> None:
    enqueue(JOB, "cpu")
    asyncio.run(send_on_loop(broker, [(JOB, "cpu")]))
    ours, celerys = (json.loads(m) for m in redis.Redis.from_url(broker).lrange("cpu", 0, -1))  # LPUSH: newest first
    assert differences(ours, celerys) == FRESH
    assert ours["headers"]["id"] == ours["properties"]["correlation_id"] != celerys["headers"]["id"]
    assert json.loads(base64.b64decode(ours["body"]))[0] == [JOB]


def test_an_unreachable_broker_costs_the_sender_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    asyncio.run(send_on_loop(f"redis://127.0.0.1:{port}/0", [(JOB, "cpu")]))
    assert "stays queued for the reaper" in caplog.text
