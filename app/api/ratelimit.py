"""Rate limits per API token: a generic cell rate algorithm (a token bucket
kept as one timestamp, the "theoretical arrival time"): `rate` requests a
second sustained, `burst` at once. The state lives in Redis when the broker is
Redis, so every API process behind a load balancer shares it; otherwise in
this process. A Redis outage lets requests through (logged): limiting is a
guard, not a reason to refuse service."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import threading
import time

log = logging.getLogger("kforge.api")

# Redis' own clock, so API hosts with skewed clocks agree; the key expires once the bucket is full again.
GCRA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local interval, capacity = tonumber(ARGV[1]), tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new = tat + interval
if new - now > capacity then return tostring(new - now - capacity) end
redis.call('SET', KEYS[1], tostring(new), 'PX', math.ceil((new - now) * 1000) + 1000)
return '0'
"""


def key_for(credential: str) -> str:
    """The bucket's name: a hash, so no token ever reaches Redis or a log."""
    return "kforge:ratelimit:" + hashlib.sha256(credential.encode()).hexdigest()[:32]


class Limiter:
    """`check` returns 0 when the request may go on, else the seconds to wait."""

    def __init__(self, rate: float, burst: int) -> None:
        self.interval, self.capacity = 1.0 / rate, burst / rate

    async def check(self, key: str) -> float:  # pragma: no cover - interface
        raise NotImplementedError


class LocalLimiter(Limiter):
    def __init__(self, rate: float, burst: int) -> None:
        super().__init__(rate, burst)
        self.tat: dict[str, float] = {}
        self.lock = threading.Lock()

    async def check(self, key: str) -> float:
        now = time.monotonic()
        with self.lock:
            if len(self.tat) > 100_000:  # forget buckets that are full again
                self.tat = {k: v for k, v in self.tat.items() if v > now}
            new = max(self.tat.get(key, now), now) + self.interval
            if new - now > self.capacity:
                return new - now - self.capacity
            self.tat[key] = new
            return 0.0


class RedisLimiter(Limiter):
    def __init__(self, rate: float, burst: int, url: str) -> None:
        super().__init__(rate, burst)
        self.url = url
        self.clients: dict[int, object] = {}  # one asyncio client per event loop

    def _script(self):  # noqa: ANN202
        import redis.asyncio as aioredis

        loop = id(asyncio.get_running_loop())
        if loop not in self.clients:
            client = aioredis.Redis.from_url(self.url, socket_timeout=1, socket_connect_timeout=1)
            self.clients = {loop: client.register_script(GCRA)}
        return self.clients[loop]

    async def check(self, key: str) -> float:
        try:
            wait = await self._script()(keys=[key], args=[self.interval, self.capacity])
        except Exception:
            log.warning("rate limit state in Redis unreachable; letting the request through", exc_info=True)
            return 0.0
        return float(wait)


def make_limiter(rate: float, burst: int, broker_url: str) -> Limiter | None:
    if rate <= 0:
        return None
    if broker_url.startswith(("redis://", "rediss://")):
        return RedisLimiter(rate, burst, broker_url)
    return LocalLimiter(rate, burst)


def retry_after(wait_s: float) -> int:
    return max(1, math.ceil(wait_s))
