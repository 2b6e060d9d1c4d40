"""What the API answers when a dependency is down, in process, against real
unreachable addresses (a free port where nothing listens): the database down
is a 503 with Retry-After and the one error body carrying the request id, on
reads and submissions alike, as /readyz says; the broker down costs a
submission nothing (the job is stored and sent later); a database mistake
that waiting does not cure (tables never migrated) stays a 500."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.api.main import create_app
from app.auth.tokens import create_token
from app.db.migrate import upgrade_database
from app.db.models import Job
from app.db.session import engine_for
from app.deps import settings as settings_dep
from app.jobs.sending.broker import celery_app
from app.outages import RETRY_AFTER_S
from app.settings import Settings, get_settings
from tests.conftest import ROOT

EVALUATION = {"reference": (ROOT / "problems/level1/1_relu_scale.py").read_text(), "device": "cpu",
              "candidate": "import torch\nclass ModelNew(torch.nn.Module:\n    pass\n"}
SUBMISSION = {"problem": "level1/1_relu_scale", "max_rounds": 0}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def client_for(settings: Settings, token: str = "no-such-token") -> TestClient:
    app = create_app()
    app.dependency_overrides[settings_dep] = lambda: settings
    return TestClient(app, headers={"Authorization": f"Bearer {token}"}, raise_server_exceptions=False)


def assert_unavailable(r, dependency: str) -> None:  # noqa: ANN001
    assert r.status_code == 503, r.text
    assert r.headers["Retry-After"] == str(RETRY_AFTER_S)
    body = r.json()
    assert body["errors"] == [f"{dependency}: unreachable"], body
    assert body["detail"] == f"the {dependency} is unreachable; retry in {RETRY_AFTER_S} s"
    assert body["request_id"] == r.headers["x-request-id"] and body["request_id"]


def test_the_database_down_is_a_503_with_retry_after(tmp_path: Path) -> None:
    dead = f"postgresql+psycopg://kforge@127.0.0.1:{free_port()}/kforge"
    with client_for(Settings(database_url=dead, data_dir=tmp_path)) as client:
        assert_unavailable(client.get("/v1/jobs/00000000-0000-0000-0000-000000000000"), "database")
        assert_unavailable(client.post("/v1/jobs", json=SUBMISSION), "database")
        assert_unavailable(client.post("/v1/evaluate", json=EVALUATION), "database")
        mine = client.get("/v1/jobs/x", headers={"X-Request-ID": "client-id-42"})
        assert_unavailable(mine, "database")
        assert mine.json()["request_id"] == "client-id-42"
        ready = client.get("/readyz")  # the probe says the same, with the same Retry-After
        assert ready.status_code == 503 and ready.headers["Retry-After"] == str(RETRY_AFTER_S)
        assert ready.json()["errors"] == ["database: unreachable: OperationalError"], ready.text


@pytest.fixture
def dead_broker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Settings, str]]:
    """A migrated SQLite database and a Redis URL where nothing listens (the Celery app reads the environment)."""
    monkeypatch.setenv("KFORGE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("KFORGE_BROKER_URL", f"redis://127.0.0.1:{free_port()}/0")
    get_settings.cache_clear()
    celery_app.cache_clear()
    settings = get_settings()
    upgrade_database(settings.db_url)
    with Session(engine_for(settings.db_url)) as s, s.begin():
        _, token = create_token(s, "outages")
    yield settings, token
    get_settings.cache_clear()  # rebuilt from the restored environment by whoever asks next
    celery_app.cache_clear()


def test_the_broker_down_costs_a_submission_nothing(dead_broker) -> None:  # noqa: ANN001
    settings, token = dead_broker
    with client_for(settings, token) as client:
        evaluation = client.post("/v1/evaluate", json=EVALUATION)
        assert evaluation.status_code == 202 and evaluation.json()["status"] == "queued", evaluation.text
        job = client.post("/v1/jobs", json=SUBMISSION)
        assert job.status_code == 201, job.text
        assert client.get(f"/v1/jobs/{job.json()['id']}").json()["status"] == "queued"
        ready = client.get("/readyz")
        assert ready.status_code == 503 and ready.json()["errors"] == ["broker: unreachable: ConnectionError"]
    with Session(engine_for(settings.db_url)) as s:  # stored, for the reaper to send once the broker is back
        assert {s.get(Job, j).status for j in (evaluation.json()["id"], job.json()["id"])} == {"queued"}


def test_a_database_never_migrated_is_a_500_not_an_outage(tmp_path: Path) -> None:
    # SQLite says "no such table" with an OperationalError, the class an outage raises too.
    with client_for(Settings(database_url=f"sqlite:///{tmp_path / 'empty.db'}", data_dir=tmp_path)) as client:
        r = client.get("/v1/jobs/x")
    assert r.status_code == 500 and "Retry-After" not in r.headers, r.text
    assert r.json() == {"detail": "internal error", "errors": [], "request_id": r.headers["x-request-id"]}
