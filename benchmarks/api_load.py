"""API load with a real load generator (hey): job reads, submissions and a
filtered job list at 10,000 jobs, 20 concurrent clients.

    bash scripts/apt-need.sh hey
    .venv/bin/python benchmarks/api_load.py [--clients 20] [--seconds 15] [--workers N] [--api-dir DIR]
        [--rate-limit on|off] [--no-list] [--open-loop RATE] [--open-loop-submit RATE]

Starts `kforge api` from --api-dir (default: this checkout; give an exported
older commit to measure "before" on the same machine minutes apart) on a
fresh PostgreSQL database (127.0.0.1:5432, dropped afterwards) with Redis
db 12 as broker (flushed afterwards); no worker consumes the queue, so only
the API is measured. Rate limiting is set out of reach (its Redis round trip
stays in the path), or off with --rate-limit off (issue 31's targets). Prints a Markdown table, the machine and its load, and the
API processes' CPU time per request, which the machine's other load does not
inflate the way it inflates latency. With --open-loop RATE, reads and
submissions are also sent at a constant RATE a second (benchmarks/open_loop.py,
latency counted from when each request was due), so a queue cannot hide;
--open-loop-submit gives submissions a rate of their own (0: none).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psycopg
import redis

ROOT = Path(__file__).resolve().parents[1]
PG = "postgresql://postgres@127.0.0.1:5432"
REDIS = "redis://127.0.0.1:6379/12"
REF = (ROOT / "problems" / "level1" / "1_relu_scale.py").read_text()


def kforge(api_dir: Path, env: dict[str, str], *args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "app.cli.main", *args], cwd=api_dir, env=env, check=True,
                         capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""


def cpu_seconds(root_pid: int) -> float:
    """User + system CPU of a process and its children (uvicorn's workers)."""
    pids = [root_pid] + [int(p) for p in subprocess.run(["pgrep", "-P", str(root_pid)], capture_output=True,
                                                        text=True).stdout.split()]
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def hey(url: str, token: str, clients: int, seconds: int, body: Path | None = None) -> dict[str, float]:
    args = ["hey", "-z", f"{seconds}s", "-c", str(clients), "-H", f"Authorization: Bearer {token}"]
    if body:
        args += ["-m", "POST", "-T", "application/json", "-D", str(body)]
    out = subprocess.run([*args, url], capture_output=True, text=True, check=True).stdout
    codes = {int(c): int(n) for c, n in re.findall(r"\[(\d{3})\]\s+(\d+) responses", out)}
    lat = {p: 1000 * float(s) for p, s in re.findall(r"(\d+)% in ([\d.]+) secs", out)}
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), "p50": lat["50"], "p99": lat["99"],
            "ok": sum(n for c, n in codes.items() if c < 300), "bad": sum(n for c, n in codes.items() if c >= 300)}


def open_loop(url: str, token: str, rate: float, seconds: int, body: Path | None = None) -> dict:
    args = [sys.executable, str(ROOT / "benchmarks" / "open_loop.py"), url, "--rate", str(rate), "--seconds",
            str(seconds), "--header", f"Authorization: Bearer {token}"] + (["--body", str(body)] if body else [])
    return json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)


def seed_jobs(db_url: str, total: int) -> None:
    """Copies the submitted jobs until `total` rows, spread over statuses and days, in one statement."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        have = conn.execute("SELECT count(*) FROM jobs").fetchone()[0]
        conn.execute("""
            INSERT INTO jobs (id, owner_id, kind, status, cancel_requested, problem_name, reference, backend, queue,
                              provider, config, runs, created_at)
            SELECT gen_random_uuid()::text, j.owner_id, CASE WHEN g %% 5 = 0 THEN 'evaluate' ELSE 'optimize' END,
                   (ARRAY['queued','running','succeeded','failed','cancelled'])[1 + g %% 5], false, j.problem_name,
                   j.reference, j.backend, j.queue, j.provider, j.config, 0, now() - g * interval '1 minute'
            FROM generate_series(1, %s) AS g, (SELECT * FROM jobs LIMIT 1) AS j""", (max(0, total - have),))
        conn.execute("ANALYZE jobs")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=int, default=15)
    ap.add_argument("--workers", type=int, default=None, help="kforge api --workers (default: its own default)")
    ap.add_argument("--api-dir", type=Path, default=ROOT)
    ap.add_argument("--jobs", type=int, default=10_000, help="jobs in the table for the list benchmark")
    ap.add_argument("--rate-limit", choices=["on", "off"], default="on",
                    help="on: a limit out of reach (its Redis round trip measured); off: KFORGE_RATE_LIMIT_PER_S=0")
    ap.add_argument("--no-list", action="store_true", help="skip the list at --jobs jobs")
    ap.add_argument("--open-loop", type=float, default=0, metavar="RATE",
                    help="also reads and submissions at a constant RATE/s (open loop)")
    ap.add_argument("--open-loop-submit", type=float, default=None, metavar="RATE",
                    help="submissions' open-loop rate (default: --open-loop's; 0: none)")
    args = ap.parse_args()
    dbname = f"kforge_bench_{secrets.token_hex(4)}"
    db_url = f"{PG}/{dbname}"
    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {dbname}")
    tmp = Path(tempfile.mkdtemp(prefix="kforge-load-"))
    env = {**os.environ, "KFORGE_DATA_DIR": str(tmp), "KFORGE_DATABASE_URL": db_url, "KFORGE_BROKER_URL": REDIS,
           "KFORGE_RATE_LIMIT_PER_S": "1000000" if args.rate_limit == "on" else "0"}
    body = tmp / "job.json"
    body.write_text(json.dumps({"reference": REF, "name": "load", "max_rounds": 0}))
    api = None
    try:
        kforge(args.api_dir, env, "db", "upgrade")
        token = kforge(args.api_dir, env, "token", "create", "load")
        port = 18000 + secrets.randbelow(2000)
        cmd = [sys.executable, "-m", "app.cli.main", "api", "--port", str(port)]
        cmd += ["--workers", str(args.workers)] if args.workers is not None else []
        api = subprocess.Popen(cmd, cwd=args.api_dir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        h = {"Authorization": f"Bearer {token}"}
        job_id = httpx.post(f"{url}/v1/jobs", json={"reference": REF, "max_rounds": 0}, headers=h).json()["id"]
        rows = []
        for name, target, post in (("POST /v1/jobs", f"{url}/v1/jobs", body),
                                   ("GET /v1/jobs/{id}", f"{url}/v1/jobs/{job_id}", None)):
            cpu0 = cpu_seconds(api.pid)
            r = hey(target, token, args.clients, args.seconds, post)
            rows.append((name, r, (cpu_seconds(api.pid) - cpu0) / max(1, r["ok"] + r["bad"])))
        if not args.no_list:
            seed_jobs(db_url, args.jobs)
            listing = f"{url}/v1/jobs?status=queued&kind=optimize&limit=50"
            cpu0 = cpu_seconds(api.pid)
            r = hey(listing, token, args.clients, args.seconds)
            rows.append((f"GET /v1/jobs?status=queued&kind=optimize&limit=50 ({args.jobs} jobs)", r,
                         (cpu_seconds(api.pid) - cpu0) / max(1, r["ok"] + r["bad"])))
        opened = []
        submit_rate = args.open_loop if args.open_loop_submit is None else args.open_loop_submit
        for name, target, post, rate in (("GET /v1/jobs/{id}", f"{url}/v1/jobs/{job_id}", None, args.open_loop),
                                         ("POST /v1/jobs", f"{url}/v1/jobs", body, submit_rate)):
            if not rate:
                continue
            cpu0 = cpu_seconds(api.pid)
            r = open_loop(target, token, rate, args.seconds, post)
            opened.append((name, r, (cpu_seconds(api.pid) - cpu0) / max(1, r["answered"])))
        print(f"machine: {platform.node()} {cpu_model()}, {os.cpu_count()} CPUs; load before/after: "
              f"{os.getloadavg()}; api dir {args.api_dir}; workers {args.workers or 'default'}; "
              f"rate limit {args.rate_limit}; {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC")
        print("| operation | clients | req/s | p50 ms | p99 ms | non-2xx | API CPU ms/req |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for name, r, cpu in rows:
            print(f"| {name} | {args.clients} | {r['rps']:.0f} | {r['p50']:.1f} | {r['p99']:.1f} | {int(r['bad'])} "
                  f"| {1000 * cpu:.2f} |")
        if opened:
            print("\n| operation (open loop) | rate asked | answered/s | p50 ms | p90 ms | p99 ms | max ms | non-2xx "
                  "| errors | most connections | API CPU ms/req | driver CPU s |")
            print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
            for name, r, cpu in opened:
                bad = sum(n for c, n in r["statuses"].items() if int(c) >= 300)
                print(f"| {name} | {r['rate']:.0f} | {r['achieved_rps']:.0f} | {r['p50_ms']} | {r['p90_ms']} | "
                      f"{r['p99_ms']} | {r['max_ms']} | {bad} | {sum(r['errors'].values())} | {r['most_connections']} "
                      f"| {1000 * cpu:.2f} | {r['driver_cpu_s']} |")
    finally:
        if api:
            api.terminate()
            api.wait(timeout=30)
        with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {dbname} WITH (FORCE)")
        redis.Redis.from_url(REDIS).flushdb()


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


if __name__ == "__main__":
    main()
