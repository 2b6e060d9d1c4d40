"""A job's working directory keeps nothing: it is empty, the job cannot write
it, and what a job writes in its own home is gone for the next job. The
judge's native cache is read-only to jobs. Real process sandbox, no mocks:
probe jobs report what they saw by raising (the error frame's message)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from sandbox.drivers.base import RunnerSession
from sandbox.drivers.process import ProcessDriver
from sandbox.native import cache as native_cache


def job(source: str) -> dict[str, Any]:
    return {"role": "reference", "source": source, "filename": "probe.py", "device": "cpu", "constants": [],
            "trials": [{"seed": 1, "input_seed": 2, "tag": "default"}], "time_reps": 0}


def probe(session: RunnerSession, body: str) -> str:
    source = "import os, sys\n" + body + "\nraise RuntimeError(repr(RESULT))\n"
    outcome = session.run(job(source), timeout=60, memory_mb=2048, max_procs=64)
    error = outcome.first("error")
    assert error is not None and "RuntimeError: " in error["message"], outcome
    return error["message"].split("RuntimeError: ", 1)[1]


def try_write(path: str) -> str:
    """A probe that writes a file at ``path`` (a Python expression) and says how that went."""
    return f"""
def attempt(path):
    try:
        with open(path, "wb") as f:
            f.write(b"cached")
        return "written"
    except OSError as exc:
        return type(exc).__name__
RESULT = attempt({path})
"""


@pytest.fixture(scope="module")
def session() -> Iterator[RunnerSession]:
    driver = ProcessDriver()
    started = driver.start("cpu")
    try:
        yield started
    finally:
        driver.stop(started)


def test_working_directory_is_empty_and_not_writable(session: RunnerSession) -> None:
    assert probe(session, "RESULT = os.listdir('.')") == "[]"
    assert probe(session, try_write("'result_cache.bin'")) in ("'PermissionError'", "'OSError'")


def test_each_job_gets_a_fresh_directory_and_nothing_survives(session: RunnerSession) -> None:
    first = probe(session, "RESULT = os.getcwd()")
    assert probe(session, try_write("os.path.join(os.environ['HOME'], 'cache.bin')")) == "'written'"
    second = probe(session, "RESULT = (os.getcwd(), os.path.exists(os.path.join(os.environ['HOME'], 'cache.bin')))")
    assert first not in second and second.endswith("False)"), (first, second)


@pytest.mark.skipif(os.geteuid() != 0, reason="jobs run under a uid of their own only when the judge is root")
def test_native_cache_is_read_only_to_jobs(session: RunnerSession) -> None:
    directory = native_cache.ensure()
    assert probe(session, try_write(repr(os.path.join(directory, "0" * 32 + ".so")))) in ("'PermissionError'", "'OSError'")


def test_nothing_a_job_leaves_in_the_scratch_root_survives() -> None:
    """Without isolation children share the runner's uid and can write the
    scratch root itself; the runner removes what they leave there."""
    driver = ProcessDriver(isolate=False)
    started = driver.start("cpu")
    try:
        where = "os.path.join(os.path.dirname(os.path.dirname(os.getcwd())), 'cache.bin')"
        assert probe(started, try_write(where)) == "'written'"
        assert probe(started, f"RESULT = os.path.exists({where})") == "False"
    finally:
        driver.stop(started)
