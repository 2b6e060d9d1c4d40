"""The published OpenAPI is a contract: Schemathesis (examples, coverage,
fuzzing and the stateful phase that follows links between operations) against
a live `kforge api`, on PostgreSQL + Redis and on the embedded defaults."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.app.service.conftest import Procs, token

ST = shutil.which("st", path=str(Path(sys.executable).parent))
CHECKS = "not_a_server_error,status_code_conformance,response_schema_conformance,content_type_conformance"
# No worker consumes the queue here: /v1/evaluate would otherwise hold each request for up to wait_s.
# Rate limiting is tested on its own (test_api_fleet); here it would only turn examples into 429s.
QUIET = {"KFORGE_API_MAX_WAIT_S": "0.5", "KFORGE_RATE_LIMIT_PER_S": "0"}


def schemathesis(url: str, bearer: str, tmp: Path) -> subprocess.CompletedProcess:
    assert ST, "schemathesis is in the dev extra: pip install -e '.[dev]'"
    return subprocess.run([ST, "run", f"{url}/openapi.json", "-H", f"Authorization: Bearer {bearer}", "-n", "40",
                           "-c", CHECKS, "--generation-database", "none", "--no-color", "--request-timeout", "20",
                           "--report", "junit", "--report-dir", str(tmp / "st-report")],
                          capture_output=True, text=True, timeout=420, cwd=tmp)  # its cache stays out of the repo


def assert_clean(run: subprocess.CompletedProcess) -> None:
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-6000:]
    summary = out.split("SUMMARY")[-1]
    assert "Stateful" in summary and re.search(r"\d+ generated, \d+ passed", summary), out[-3000:]
    assert not re.search(r"\b\d+ (failures?|errors?)\b", summary), out[-6000:]


def test_schemathesis_finds_nothing_on_postgres_and_redis(service_env, tmp_path):
    env = {**service_env, **QUIET}
    procs = Procs(env, tmp_path)
    try:
        url = procs.api()
        assert_clean(schemathesis(url, token(env, "contract"), tmp_path))
    finally:
        procs.stop_all()


def test_schemathesis_finds_nothing_on_embedded_defaults(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFORGE_")}
    env.update(KFORGE_DATA_DIR=str(tmp_path / "data"), **QUIET)
    procs = Procs(env, tmp_path)
    try:
        bearer = token(env, "contract")
        url = procs.api()
        assert_clean(schemathesis(url, bearer, tmp_path))
    finally:
        procs.stop_all()
