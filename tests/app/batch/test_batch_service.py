"""`kforge batch run --api`: the same batch through a running service (`kforge
serve`, embedded SQLite and file broker). A client killed while its job runs
waits for the same job when rerun instead of submitting it again."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess

import httpx

from tests.app.service.conftest import free_port, token, wait_for
from tests.conftest import KFORGE, ROOT, run_kforge


def test_batch_through_the_service_resumes_its_job(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("KFORGE_DATABASE_URL", "KFORGE_BROKER_URL")}
    env.update(KFORGE_DATA_DIR=str(tmp_path / "data"), KFORGE_DEVICE="cpu")
    suite = tmp_path / "suite" / "level1"
    suite.mkdir(parents=True)
    shutil.copy(ROOT / "problems" / "level1" / "1_relu_scale.py", suite)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with open(tmp_path / "serve.log", "w") as log:
        serve = subprocess.Popen([*KFORGE, "serve", "--port", str(port)], cwd=ROOT, env=env, stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: httpx.get(f"{url}/healthz", timeout=1).status_code == 200, 120, "kforge serve up")
        tok = token(env, "batch")
        out = tmp_path / "run"
        args = ["batch", "run", str(tmp_path / "suite"), "--provider", "offline", "--max-rounds", "0",
                "--device", "cpu", "--out", str(out), "--api", url, "--token", tok]
        job_file = out / "problems" / "level1" / "1_relu_scale" / "s0" / "job.json"
        client = subprocess.Popen([*KFORGE, *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_for(job_file.exists, 120, "the job submitted")
        finally:
            os.killpg(client.pid, signal.SIGKILL)
            client.wait(timeout=30)
        job_id = json.loads(job_file.read_text())["id"]

        proc = run_kforge(*args, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        summary = json.loads(job_file.with_name("summary.json").read_text())
        assert summary["job_id"] == job_id and summary["status"] == "done" and summary["correct"]
        assert summary["held_out"]["status"] == "pass" and summary["device"] == "cpu"
        jobs = httpx.get(f"{url}/v1/jobs", params={"kind": "optimize"}, headers={"Authorization": f"Bearer {tok}"})
        assert jobs.json()["total"] == 1, "the rerun waited for the job it had submitted"
        report = json.loads((out / "report.json").read_text())
        assert report["run"]["api"] == url and report["metrics"]["per_sample"]["correctness_rate"] == 1.0
        assert not any(tok in p.read_text() for p in out.rglob("*") if p.is_file()), "the token is never written"
    finally:
        os.killpg(serve.pid, signal.SIGTERM)
        try:
            serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
