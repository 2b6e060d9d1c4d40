"""What a worker does when a dependency fails inside a job (on the embedded
SQLite database): an outage (the database unreachable, at the claim, in the
run or at the final write) is waited out and the job resumes and succeeds;
only the job's own error marks it failed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.exc import OperationalError

from app.db.migrate import upgrade_database
from app.db.models import Job, User
from app.db.session import transaction
from app.jobs import execute
from app.jobs.status import JobStatus
from app.settings import Settings, get_settings


def outage() -> OperationalError:
    return OperationalError("SELECT 1", {}, ConnectionRefusedError("connection refused"))


@pytest.fixture
def settings(tmp_path, monkeypatch) -> Iterator[Settings]:
    monkeypatch.setenv("KFORGE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("KFORGE_HEARTBEAT_S", "0.2")
    get_settings.cache_clear()
    settings = get_settings()
    upgrade_database(settings.db_url)
    yield settings
    get_settings.cache_clear()


def new_job(url: str) -> str:
    with transaction(url) as s:
        user = User(name="outages")
        s.add(user)
        s.flush()
        job = Job(owner_id=user.id, kind="evaluate", problem_name="evaluate", reference="x = 1\n", candidate="y = 2\n",
                  queue="cpu", config={"device": "cpu"})
        s.add(job)
        s.flush()
        return job.id


def row(url: str, job_id: str) -> Job:
    with transaction(url) as s:
        return s.get(Job, job_id)


def flaky(real, failures: int):  # noqa: ANN001, ANN201
    """`real`, failing with an outage the first `failures` calls."""
    calls = {"n": 0}

    def call(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls["n"] += 1
        if calls["n"] <= failures:
            raise outage()
        return real(*args, **kwargs)

    call.calls = calls
    return call


def test_an_outage_at_claim_in_the_run_and_at_finish_is_waited_out(settings, monkeypatch) -> None:
    job_id = new_job(settings.db_url)
    run = flaky(lambda *a: (JobStatus.SUCCEEDED, {"verdict": "fail"}), failures=2)
    monkeypatch.setattr(execute, "claim", flaky(execute.claim, failures=2))
    monkeypatch.setattr(execute, "_run", run)
    monkeypatch.setattr(execute, "finish", flaky(execute.finish, failures=1))
    assert execute.execute_job(job_id, settings) == JobStatus.SUCCEEDED
    done = row(settings.db_url, job_id)
    assert done.status == JobStatus.SUCCEEDED and done.result == {"verdict": "fail"} and done.runs == 1
    assert run.calls["n"] == 3  # resumed twice, on the same lease


def test_the_job_own_error_fails_it(settings, monkeypatch) -> None:
    job_id = new_job(settings.db_url)

    def broken(*_: object) -> None:
        raise ValueError("the candidate broke the judge")

    monkeypatch.setattr(execute, "_run", broken)
    assert execute.execute_job(job_id, settings) == JobStatus.FAILED
    assert "ValueError: the candidate broke the judge" in row(settings.db_url, job_id).error


def test_an_outage_longer_than_the_wait_leaves_the_job_to_be_resumed(settings, monkeypatch) -> None:
    job_id = new_job(settings.db_url)
    monkeypatch.setattr(execute, "_run", flaky(lambda *a: None, failures=10_000))
    monkeypatch.setattr(execute, "MAX_RESUMES", 2)
    with pytest.raises(OperationalError):
        execute.execute_job(job_id, settings)
    assert row(settings.db_url, job_id).status == JobStatus.RUNNING  # not failed: the reaper resumes it
