"""`--backend cpu` wherever a backend is chosen, and judge options built from
Settings in one place (app/compose.eval_options): the CLI's eval / optimize /
batch, and REST job creation (in-process, on a migrated SQLite file)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.api.main import create_app
from app.auth.tokens import create_token
from app.backends import BACKENDS, BackendError, device_for
from app.compose import eval_options
from app.db.migrate import upgrade_database
from app.db.models import Job
from app.db.session import engine_for
from app.deps import settings as settings_dep
from app.settings import Settings
from tests.conftest import ROOT, eval_json, run_kforge

RELU = ROOT / "problems" / "level1" / "1_relu_scale.py"
HONEST = ROOT / "problems" / "level1" / "solutions" / "relu_scale" / "correct_triton.py"


def test_eval_options_come_from_settings_and_the_backend():
    s = Settings(device="auto", sandbox="docker", eval_timeout_s=33.0, memory_mb=2048, cpu_threads=3)
    o = eval_options(s, "cpu")
    assert (o.device, o.sandbox, o.timeout, o.memory_mb) == ("cpu", "docker", 33.0, 2048)
    assert eval_options(s, "triton").device == "auto" and eval_options(s, "cuda", device="cuda").device == "cuda"
    given = eval_options(s, "triton", device="cpu", sandbox="process", timeout=5.0, memory_mb=512, trials=7)
    assert (given.device, given.sandbox, given.timeout, given.memory_mb, given.trials) == ("cpu", "process", 5.0, 512, 7)
    assert eval_options(Settings(device="cuda"), "cpu", device="auto").device == "cpu"
    with pytest.raises(BackendError, match="--backend cpu runs on the CPU"):
        eval_options(s, "cpu", device="cuda")
    with pytest.raises(BackendError, match="use auto, triton, cuda or cpu"):
        device_for("opencl", None)
    assert BACKENDS == ("triton", "cuda", "cpu")


def test_eval_backend_cpu_judges_on_the_cpu():
    code, out, _ = eval_json(RELU, HONEST, "--backend", "cpu")
    assert code == 0 and out["verdict"] == "pass" and out["device"] == "cpu", out
    assert set(out) >= {"verdict", "reasons", "correct", "speedup", "checks"}


def test_backend_flags_are_validated_with_the_contract_kept():
    code, out, _ = eval_json(RELU, HONEST, "--backend", "cpu", "--device", "cuda")
    assert code == 2 and out["verdict"] == "error" and "--backend cpu runs on the CPU" in out["reasons"][0]
    assert out["checks"] == {} and out["speedup"] is None and out["correct"] is False
    code, out, _ = eval_json(RELU, HONEST, "--backend", "opencl")
    assert code == 2 and "use auto, triton, cuda or cpu" in out["reasons"][0]
    optimize = run_kforge("optimize", str(RELU), "--backend", "cpu", "--device", "cuda", "--json")
    assert optimize.returncode == 2 and "--backend cpu runs on the CPU" in optimize.stdout
    batch = run_kforge("batch", "run", str(ROOT / "problems"), "--backend", "opencl", "--json")
    assert batch.returncode == 2 and "use auto, triton, cuda or cpu" in batch.stdout
    helps = [run_kforge(*cmd, "--help").stdout for cmd in (("eval",), ("optimize",), ("batch", "run"))]
    assert all("cpu" in h for h in helps) and "--fit-memory" in helps[2]


@pytest.fixture
def api(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'kforge.db'}"
    upgrade_database(url)
    with Session(engine_for(url)) as s, s.begin():
        _, token = create_token(s, "alice")
    app = create_app()
    settings = Settings(database_url=url, data_dir=tmp_path)
    app.dependency_overrides[settings_dep] = lambda: settings  # the one settings dependency (API and dashboard)
    with TestClient(app, headers={"Authorization": f"Bearer {token}"}) as client:
        yield client, url


def test_rest_jobs_take_backend_cpu(api):
    client, url = api
    created = client.post("/v1/jobs", json={"problem": "level1/1_relu_scale", "backend": "cpu", "max_rounds": 0})
    assert created.status_code == 201, created.text
    job = client.get(f"/v1/jobs/{created.json()['id']}").json()
    assert job["backend"] == "cpu" and job["queue"] == "cpu"
    with Session(engine_for(url)) as s:
        assert s.get(Job, job["id"]).config["device"] == "cpu"  # what the worker's eval_options reads
    clash = client.post("/v1/jobs", json={"problem": "level1/1_relu_scale", "backend": "cpu", "device": "cuda"})
    assert clash.status_code == 422 and "--backend cpu runs on the CPU" in clash.text
    assert client.post("/v1/jobs", json={"problem": "level1/1_relu_scale", "backend": "opencl"}).status_code == 422
    schema = client.get("/openapi.json").json()["components"]["schemas"]["JobCreate"]["properties"]["backend"]
    assert schema["enum"] == ["auto", "triton", "cuda", "cpu"] and schema["default"] == "auto"
