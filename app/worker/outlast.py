"""Waiting out a dependency outage inside a job: a step that fails because
the database or the broker is unreachable (app/outages.py) is tried again,
every 0.25 s at first and then every 2 s at most, so the job goes on within
about two seconds of the dependency's return. After `wait_s` the error is
raised: the job is then left to be resumed later (the task's retry, or
another worker's reaper once its heartbeat is stale), never marked failed."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from ..outages import dependency_down

log = logging.getLogger("kforge.worker")
T = TypeVar("T")
FIRST_S, MAX_S = 0.25, 2.0


def pause(failures: int) -> float:
    return min(MAX_S, FIRST_S * 2 ** failures)


def outlast(step: Callable[[], T], wait_s: float, what: str) -> T:
    """`step()`, tried again while it meets an outage, for up to `wait_s` seconds."""
    started, failures = time.monotonic(), 0
    while True:
        try:
            return step()
        except Exception as exc:
            down = dependency_down(exc)
            if down is None or time.monotonic() - started >= wait_s:
                raise
            if failures == 0:
                log.warning("%s: the %s is unreachable (%s); waiting for it", what, down, type(exc).__name__)
            time.sleep(pause(failures))
            failures += 1
