"""Real peers for service tests: a fresh PostgreSQL database built by the
migrations, a private Redis server (so tests may restart it), and helpers to
run `kforge api` / `kforge worker` as real processes."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[3]
PG = "postgresql://postgres@127.0.0.1:5432"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def pg_url() -> Iterator[str]:
    name = f"kforge_test_{secrets.token_hex(4)}"
    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = f"{PG}/{name}"
    subprocess.run([sys.executable, "-m", "app.cli.main", "db", "upgrade"], cwd=ROOT, check=True,
                   env={**os.environ, "KFORGE_DATABASE_URL": url}, capture_output=True)
    yield url
    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


class RedisServer:
    def __init__(self, tmp: Path) -> None:
        self.port = free_port()
        self.tmp = tmp
        self.appendonly = False  # True: an append-only file in `tmp`, so a restart keeps the queues
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        aof = "yes" if self.appendonly else "no"
        self.proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", aof, "--dir", str(self.tmp)], stdout=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis did not start")

    def kill(self) -> None:
        if self.proc:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def redis_server(tmp_path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.kill()


@pytest.fixture
def service_env(pg_url, redis_server, tmp_path) -> dict[str, str]:
    return {**os.environ, "KFORGE_DATABASE_URL": pg_url, "KFORGE_BROKER_URL": redis_server.url,
            "KFORGE_DATA_DIR": str(tmp_path / "data"), "KFORGE_HEARTBEAT_S": "1", "KFORGE_STALE_AFTER_S": "6",
            "KFORGE_DEVICE": "cpu", "OPENAI_API_KEY": "sk-test-service"}


class Procs:
    def __init__(self, env: dict[str, str], tmp: Path) -> None:
        self.env, self.tmp, self.procs = env, tmp, []

    def start(self, *args: str, name: str) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "ab")
        proc = subprocess.Popen([sys.executable, "-m", "app.cli.main", *args], cwd=ROOT, env=self.env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def api(self) -> str:
        port = free_port()
        self.start("api", "--port", str(port), name="api")
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: httpx.get(f"{url}/healthz", timeout=1).status_code == 200, 30, "api up")
        return url

    def worker(self, name: str) -> subprocess.Popen:
        return self.start("worker", "--queue", "cpu", "--name", f"{name}@test", name=name)

    def stop_all(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


@pytest.fixture
def procs(service_env, tmp_path) -> Iterator[Procs]:
    p = Procs(service_env, tmp_path)
    yield p
    p.stop_all()


def token(env: dict[str, str], name: str, admin: bool = False) -> str:
    args = [sys.executable, "-m", "app.cli.main", "token", "create", name] + (["--admin"] if admin else [])
    out = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def wait_for(predicate, timeout: float, what: str, every: float = 0.2):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except Exception as exc:  # the peer is starting or restarting
            last = exc
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")
