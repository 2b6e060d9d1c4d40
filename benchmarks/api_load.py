"""API load: submissions per second and job-read latency under concurrent clients.

    .venv/bin/python benchmarks/api_load.py [--backend postgres|sqlite] [--clients 20]
        [--submissions 300] [--reads 3000]

Starts a real `kforge api` process (one uvicorn worker) on a fresh database
(PostgreSQL database created for the run, or a SQLite file) with a Redis or
SQLite broker; no worker consumes the queue, so only the API is measured.
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.service.conftest import PG, free_port, wait_for  # noqa: E402

REF = (ROOT / "problems" / "level1" / "1_relu_scale.py").read_text()


def kforge(env: dict[str, str], *args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "app.cli.main", *args], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=["postgres", "sqlite"], default="postgres")
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--submissions", type=int, default=300)
    ap.add_argument("--reads", type=int, default=3000)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kforge-load-"))
    env = {**os.environ, "KFORGE_DATA_DIR": str(tmp)}
    dbname = None
    if args.backend == "postgres":
        import psycopg

        dbname = f"kforge_load_{secrets.token_hex(4)}"
        with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {dbname}")
        env.update(KFORGE_DATABASE_URL=f"{PG}/{dbname}", KFORGE_BROKER_URL="redis://127.0.0.1:6379/14")
    kforge(env, "db", "upgrade")
    token = kforge(env, "token", "create", "load")
    port = free_port()
    api = subprocess.Popen([sys.executable, "-m", "app.cli.main", "api", "--port", str(port)], cwd=ROOT, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url, h = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {token}"}
    try:
        wait_for(lambda: httpx.get(f"{url}/healthz").status_code == 200, 60, "api")
        client = httpx.Client(headers=h, timeout=60, limits=httpx.Limits(max_connections=args.clients * 2))

        def submit(i: int) -> tuple[float, str]:
            t0 = time.perf_counter()
            r = client.post(f"{url}/v1/jobs", json={"reference": REF, "name": f"load{i}", "max_rounds": 0})
            assert r.status_code == 201, r.text
            return time.perf_counter() - t0, r.json()["id"]

        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.clients) as pool:
            subs = list(pool.map(submit, range(args.submissions)))
        sub_wall = time.perf_counter() - t0
        ids = [i for _, i in subs]

        def read(_: int) -> float:
            t = time.perf_counter()
            r = client.get(f"{url}/v1/jobs/{random.choice(ids)}")
            assert r.status_code == 200
            return time.perf_counter() - t

        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.clients) as pool:
            reads = list(pool.map(read, range(args.reads)))
        read_wall = time.perf_counter() - t0
        lat = [s for s, _ in subs]
        print("| backend | clients | submissions/s | submit p50 ms | submit p99 ms | reads/s | read p50 ms | read p99 ms |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        print(f"| {args.backend} | {args.clients} | {args.submissions / sub_wall:.1f} | {1000 * statistics.median(lat):.1f} "
              f"| {1000 * pct(lat, 99):.1f} | {args.reads / read_wall:.1f} | {1000 * statistics.median(reads):.1f} "
              f"| {1000 * pct(reads, 99):.1f} |")
    finally:
        api.terminate()
        api.wait()
        if dbname:
            import psycopg
            import redis

            with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
                conn.execute(f"DROP DATABASE {dbname} WITH (FORCE)")
            redis.Redis.from_url("redis://127.0.0.1:6379/14").flushdb()


if __name__ == "__main__":
    main()
