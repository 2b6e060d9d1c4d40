"""One ASGI middleware (plain ASGI: Starlette's BaseHTTPMiddleware costs a task
and a stream per request) for what every request needs: an id, taken from the
client's X-Request-ID when it is sane or made here, sent back on the response
and put on every log line of the request; the latency histogram; one access
log line."""

from __future__ import annotations

import logging
import re
import time
import uuid
from contextvars import ContextVar
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import outage, unexpected
from .metrics import REQUEST_SECONDS

log = logging.getLogger("kforge.access")
REQUEST_ID: ContextVar[str] = ContextVar("request_id", default="-")
# A client's id is echoed into logs and headers: printable, short, no spaces.
SANE_ID = re.compile(r"^[A-Za-z0-9._:/+=-]{1,128}$")
# The latency histogram's series by (method, route, status), looked up once each: `labels()` takes a lock.
HISTOGRAMS: dict[tuple[str, str, int], Any] = {}


class RequestIdFilter(logging.Filter):
    """Adds `request_id` to every record, so a format may print %(request_id)s."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = REQUEST_ID.get()
        return True


def request_id_from(scope: Scope) -> str:
    for key, value in scope.get("headers", ()):
        if key == b"x-request-id":
            text = value.decode("latin-1")
            if SANE_ID.match(text):
                return text
            break
    return uuid.uuid4().hex


class RequestContext:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = request_id_from(scope)
        token = REQUEST_ID.set(rid)
        scope.setdefault("state", {})["request_id"] = rid
        started, status, status_sent = time.perf_counter(), 500, None

        async def send_with_id(message: Message) -> None:
            nonlocal status, status_sent
            if message["type"] == "http.response.start":
                status = status_sent = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", rid.encode())]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception as exc:
            answer = outage(None, exc, rid)
            if answer is None:
                logging.getLogger("kforge.api").exception("unhandled error")
            else:
                logging.getLogger("kforge.api").warning("dependency down: %s: %s", type(exc).__name__, exc)
            if status_sent is None:
                await (answer or unexpected(rid))(scope, receive, send_with_id)
            else:
                raise
        finally:
            elapsed = time.perf_counter() - started
            series = (scope["method"], getattr(scope.get("route"), "path", "unmatched"), status)
            if (histogram := HISTOGRAMS.get(series)) is None:
                histogram = HISTOGRAMS[series] = REQUEST_SECONDS.labels(series[0], series[1], str(status))
            histogram.observe(elapsed)
            log.info("%s %s %d %.1fms", scope["method"], scope["path"], status, elapsed * 1000)
            REQUEST_ID.reset(token)
