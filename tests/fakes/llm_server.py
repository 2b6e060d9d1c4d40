"""A loopback HTTP server that speaks the OpenAI, Anthropic and Gemini APIs with scripted replies.

The real `openai`, `anthropic` and `google-genai` clients talk to it over TCP, so tests cover
what production covers (URL building, headers, JSON parsing, the SDKs' own
exception classes) without patching either SDK and without the internet.

    with FakeLLMServer() as srv:
        srv.queue(Reply("hello"))
        OpenAIProvider("gpt-4.1", api_key="k", base_url=srv.openai_base_url).complete("sys", msgs)
        assert srv.requests[0].headers["authorization"] == "Bearer k"

As a process (for end-to-end tests of the CLI), printing the port on the first line:

    python -m tests.fakes.llm_server --port 0 --script replies.jsonl [--requests-log seen.jsonl]
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.fakes.llm_wire import APIS, GEMINI_PATH, Api, RecordedRequest, Reply, error_body, models_body, success_body

__all__ = ["FakeLLMServer", "RecordedRequest", "Reply", "Responder"]

Responder = Callable[[RecordedRequest], Reply]
_ROUTES: dict[str, Api] = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic"}


class FakeLLMServer:
    """Serves scripted replies on 127.0.0.1 from a background thread and records every request.

    Replies form one FIFO script; each entry is for any endpoint or for one
    ("openai" / "anthropic" / "gemini"), and a request takes the oldest entry it may take.
    With none left it asks `responder(request)`; without one it answers 400
    ("no scripted reply left"), which providers do not retry, so a short
    script fails fast.
    """

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        responder: Responder | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        models: tuple[str, ...] = ("fake-model",),
        on_request: Callable[[RecordedRequest], None] | None = None,
    ) -> None:
        self.responder = responder
        self._host = host
        self.models = models
        self._on_request = on_request
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._script: collections.deque[tuple[Api | None, Reply]] = collections.deque((None, r) for r in replies)
        self._requests: list[RecordedRequest] = []
        self._httpd = _Server((host, port), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    # -- scripting and inspection ------------------------------------------------

    def queue(self, *replies: Reply, api: Api | None = None) -> None:
        """Append replies to the script, for any endpoint or only for `api` ("openai" / "anthropic" / "gemini")."""
        if api is not None and api not in APIS:
            raise ValueError(f"api must be one of {APIS} or None, not {api!r}")
        with self._lock:
            self._script.extend((api, reply) for reply in replies)

    def pending(self) -> int:
        """Scripted replies not yet served."""
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far, oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

    def requests_to(self, api: Api) -> list[RecordedRequest]:
        return [r for r in self.requests if r.api == api]

    # -- addresses ---------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """What OpenAI-compatible clients take as base_url."""
        return f"{self.url}/v1"

    @property
    def gemini_base_url(self) -> str:
        """What the Gemini client takes as base_url (it appends /v1beta/models/<model>:generateContent)."""
        return self.url

    @property
    def anthropic_base_url(self) -> str:
        """What the Anthropic client takes as base_url (it appends /v1/messages)."""
        return self.url

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> FakeLLMServer:
        # A short poll interval makes stop() quick; tests start and stop many servers.
        serve = functools.partial(self._httpd.serve_forever, poll_interval=0.02)
        self._thread = threading.Thread(target=serve, name="fake-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping through a scripted delay
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- used by the handler -----------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)
        if self._on_request is not None:
            self._on_request(request)

    def _next_reply(self, request: RecordedRequest) -> Reply | None:
        with self._lock:
            for index, (api, reply) in enumerate(self._script):
                if api is None or api == request.api:
                    del self._script[index]
                    return reply
        return self.responder(request) if self.responder is not None else None

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeLLMServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect
    timeout = 10  # drop idle keep-alive connections eventually
    server: _Server

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/v1/models":
            self._send(200, models_body(self.server.fake.models))
        else:
            self._send(404, error_body(None, 404, f"no route GET {path}"))

    def do_POST(self) -> None:
        fake = self.server.fake
        path = urlsplit(self.path).path
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        api = _ROUTES.get(path) or ("gemini" if GEMINI_PATH.match(path) else None)
        request = RecordedRequest("POST", path, {k.lower(): v for k, v in self.headers.items()}, body, api)
        fake._record(request)
        if api is None:
            self._send(404, error_body(None, 404, f"no route POST {path}"))
            return
        if isinstance(body, dict) and body.get("stream"):
            self._send(400, error_body(api, 400, "the fake LLM server does not stream"))
            return
        reply = fake._next_reply(request)
        if reply is None:
            self._send(400, error_body(api, 400, f"fake LLM server: no scripted reply left for POST {path}"))
            return
        if reply.delay_s > 0:
            fake._wait(reply.delay_s)
        if reply.raw is not None:
            self._send_bytes(reply.status, reply.raw.encode(), "text/html", reply.headers)
            return
        if reply.status == 200:
            payload = success_body(api, reply, request)
        else:
            payload = error_body(api, reply.status, reply.text, reply.error_type)
        self._send(reply.status, payload, reply.headers)

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_bytes(self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (time-out) before we answered

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default per-request line on stderr; tests read `requests` instead."""


def _load_script(path: Path) -> list[tuple[Api | None, Reply]]:
    """JSONL: one reply per line ({"text": ..., "status": ..., "api": "openai"?}); blank and # lines skipped."""
    script = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            obj = json.loads(line)
            script.append((obj.get("api"), Reply.from_json(obj)))
    return script


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--script", type=Path, help="JSONL file, one reply per line")
    parser.add_argument("--requests-log", type=Path, help="append every request here as a JSON line")
    args = parser.parse_args(argv)

    log_lock = threading.Lock()

    def log_request(request: RecordedRequest) -> None:
        if args.requests_log is not None:
            with log_lock, args.requests_log.open("a") as out:
                out.write(json.dumps(request.to_json()) + "\n")

    server = FakeLLMServer(host=args.host, port=args.port, on_request=log_request)
    for api, reply in _load_script(args.script) if args.script else []:
        server.queue(reply, api=api)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with server:
        print(server.port, flush=True)
        while not stop.wait(0.2):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
