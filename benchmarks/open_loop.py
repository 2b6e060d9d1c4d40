"""An open-loop HTTP load generator: requests start at a constant arrival rate
whatever the server does, and each latency is counted from the moment its
request was due, not from when a connection was free to send it. A closed-loop
tool (hey: 20 clients, each waiting for its answer before asking again) slows
down with the server and hides the queue that builds up; here a slow server
shows as a growing p99. (wrk2 and vegeta do this too; neither is packaged in
Debian, so this is ours, on asyncio + uvloop with hand-written HTTP/1.1 so the
driver stays cheap next to the API on a small machine.)

    .venv/bin/python benchmarks/open_loop.py URL --rate 1000 --seconds 15 [--connections 64] \\
        [--header 'Authorization: Bearer T'] [--body job.json]   # --body: POST it as JSON

At most --connections are open (kept alive, opened as needed), as wrk2's -c: a
request due while all are busy waits for one, and that wait is in its latency.

Prints one JSON object: rate asked and achieved, latency percentiles (ms),
status counts, errors, the most connections open at once, and the driver's own
CPU seconds. Used by benchmarks/api_load.py --open-loop RATE.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time
from pathlib import Path
from urllib.parse import urlsplit


def request_bytes(url: str, headers: list[str], body: bytes | None) -> tuple[str, int, bytes]:
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    lines = [f"{'POST' if body is not None else 'GET'} {target or '/'} HTTP/1.1", f"Host: {parts.netloc}", *headers]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return parts.hostname or "127.0.0.1", parts.port or 80, ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")


async def read_response(reader: asyncio.StreamReader) -> int:
    """The status of one response (its body read and dropped); keep-alive, Content-Length bodies only."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        if line[:15].lower() == b"content-length:":
            length = int(line[15:])
    if length:
        await reader.readexactly(length)
    return status


class Driver:
    def __init__(self, host: str, port: int, payload: bytes, connections: int) -> None:
        self.host, self.port, self.payload, self.max_open = host, port, payload, connections
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.open = self.most_open = 0
        self.waiting: asyncio.Queue[None] = asyncio.Queue()
        self.latencies: list[float] = []
        self.statuses: dict[int, int] = {}
        self.errors: dict[str, int] = {}

    async def connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bool]:
        """(reader, writer, reused): an idle kept-alive connection, or a new one."""
        while not self.idle and self.open >= self.max_open:
            await self.waiting.get()  # a request that finds every connection busy queues, its clock running
        if self.idle:
            return (*self.idle.pop(), True)
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            return (*await asyncio.open_connection(self.host, self.port), False)
        except BaseException:
            self.open -= 1
            raise

    def error(self, exc: BaseException) -> None:
        self.errors[type(exc).__name__] = self.errors.get(type(exc).__name__, 0) + 1

    async def one(self, due: float) -> None:
        try:
            for _ in range(2):
                try:
                    reader, writer, reused = await self.connection()
                except OSError as exc:
                    self.error(exc)
                    return
                try:
                    writer.write(self.payload)
                    status = await read_response(reader)
                except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                    writer.close()
                    self.open -= 1
                    # The server closes a connection idle past its keep-alive timeout; a client sends again on a
                    # new one when a reused connection ends before any answer (as HTTP clients do).
                    if reused and isinstance(exc, (ConnectionError, asyncio.IncompleteReadError)) \
                            and not getattr(exc, "partial", b""):
                        continue
                    self.error(exc)
                    return
                self.latencies.append(time.perf_counter() - due)
                self.statuses[status] = self.statuses.get(status, 0) + 1
                self.idle.append((reader, writer))
                return
        finally:
            self.waiting.put_nowait(None)

    async def run(self, rate: float, seconds: float) -> float:
        """Starts request i at start + i / rate; returns the seconds until the last answer."""
        tasks, start, n = set(), time.perf_counter(), int(rate * seconds)
        for i in range(n):
            due = start + i / rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            task = asyncio.create_task(self.one(due))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        while tasks:
            await asyncio.gather(*tasks)
        return time.perf_counter() - start


def percentile(sorted_ms: list[float], p: float) -> float | None:
    if not sorted_ms:
        return None
    return round(sorted_ms[min(len(sorted_ms) - 1, int(p / 100 * len(sorted_ms)))], 2)


async def measure(url: str, rate: float, seconds: float, headers: list[str], body: bytes | None,
                  connections: int = 64) -> dict:
    host, port, payload = request_bytes(url, headers, body)
    driver = Driver(host, port, payload, connections)
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    elapsed = await driver.run(rate, seconds)
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    for _, writer in driver.idle:
        writer.close()
    ms = sorted(1000 * x for x in driver.latencies)
    return {"rate": rate, "seconds": seconds, "sent": int(rate * seconds), "answered": len(ms),
            "achieved_rps": round(len(ms) / elapsed, 1), "p50_ms": percentile(ms, 50), "p90_ms": percentile(ms, 90),
            "p99_ms": percentile(ms, 99), "max_ms": round(ms[-1], 2) if ms else None,
            "statuses": {str(k): v for k, v in sorted(driver.statuses.items())}, "errors": driver.errors,
            "most_connections": driver.most_open,
            "driver_cpu_s": round(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("url")
    ap.add_argument("--rate", type=float, default=1000, help="requests started per second")
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--connections", type=int, default=64, help="most connections open at once")
    ap.add_argument("--header", action="append", default=[], help="'Name: value', repeatable")
    ap.add_argument("--body", type=Path, help="POST this file's bytes as JSON")
    args = ap.parse_args()
    body = args.body.read_bytes() if args.body else None
    try:
        from uvloop import run
    except ImportError:
        run = asyncio.run
    print(json.dumps(run(measure(args.url, args.rate, args.seconds, args.header, body, args.connections))))


if __name__ == "__main__":
    main()
