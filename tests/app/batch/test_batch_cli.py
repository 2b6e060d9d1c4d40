"""`kforge batch run` end to end on three bundled problems with the offline
engine: a batch killed after its first task, rerun, skips what finished,
finishes the rest, and writes every report; then `batch compare`.

One run serves every test here (a module fixture): the CLI starts are the slow part.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from app.cli.batch_cmd import batch_app
from tests.conftest import KFORGE, ROOT, run_kforge

IDS = ["level1/1_relu_scale", "level1/2_gelu", "level1/3_sigmoid"]


def batch_args(out: Path, *extra: str) -> list[str]:
    return ["batch", "run", str(ROOT / "problems"), "--level", "1", "--problems", "[123]_*", "--provider", "offline",
            "--max-rounds", "0", "--offline-starters", "1", "--device", "cpu", "--backend", "triton",
            "--out", str(out), *extra]  # Triton's interpreter: reports without timing


@pytest.fixture(scope="module")
def resumed(tmp_path_factory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("batch")
    out = tmp / "run"
    with open(tmp / "first.log", "w") as log:
        first = subprocess.Popen([*KFORGE, *batch_args(out, "--workers", "1")], cwd=ROOT, stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True)
    try:
        done = _wait_for_summary(out, first, timeout=300)
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the batch and its worker processes, mid-run
        first.wait(timeout=30)
    killed = {"report_existed": (out / "report.json").exists(), "log": (tmp / "first.log").read_text(),
              "finished": {p: p.stat().st_mtime_ns for p in done}}
    rerun = run_kforge(*batch_args(out, "--workers", "2", "--json"))
    return {"out": out, "killed": killed, "rerun": rerun}


def test_killed_batch_resumes_and_skips_what_finished(resumed):
    killed, rerun, out = resumed["killed"], resumed["rerun"], resumed["out"]
    assert not killed["report_existed"], "killed before the end"
    assert len(killed["finished"]) == 1, killed["log"]
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "resuming: 1 of 3 task(s) already done" in rerun.stderr
    assert {p: p.stat().st_mtime_ns for p in killed["finished"]} == killed["finished"], "not run again"
    assert len(list(out.glob("problems/level1/*/s0/summary.json"))) == 3


def test_reports_after_the_resumed_run(resumed):
    out, rerun = resumed["out"], resumed["rerun"]
    printed = json.loads(rerun.stdout)
    assert printed["out"] == str(out)
    # Triton's interpreter: which of kernel / eager / torch.compile is fastest is not known, and says so.
    assert [p["fastest"] for p in printed["problems"]] == ["unknown"] * 3
    assert printed["metrics"]["per_sample"]["kernel_won"] == 0
    report = json.loads((out / "report.json").read_text())
    assert [r["problem"] for r in report["problems"]] == IDS
    for pid in IDS:
        summary = json.loads((out / "problems" / pid / "s0" / "summary.json").read_text())
        assert summary["status"] == "done" and summary["device"] == "cpu" and summary["candidates"] == 1
        assert summary["speedup_eager"] is None and summary["speedup_compile"] is None
        assert summary["comparison"]["fastest"] == "unknown"
        if summary["correct"]:
            assert (out / "problems" / pid / "s0" / "best.py").exists()
            assert summary["held_out"]["status"] == "pass" and summary["held_out"]["scale"] == "x1.25 odd"
    m = report["metrics"]["per_sample"]
    assert m["records"] == 3 and m["errors"] == 0 and report["records"][0]["correct"], "offline solves relu-scale"
    assert m["fast_p_eager"]["0"] == m["correctness_rate"] and m["fast_p_eager"]["1"] is None
    assert any("no GPU timing" in n for n in m["notes"])
    html = (out / "report.html").read_text()
    assert "<svg" in html and not re.search(r"https?://", html)
    assert len((out / "report.csv").read_text().splitlines()) == 4
    assert "# KForge batch report" in (out / "report.md").read_text()
    assert re.search(r"(pass|fail) level1/2_gelu s0", rerun.stderr), "a line per finished task on stderr"


def test_compare_and_settings_guard(resumed):
    out, runner = resumed["out"], CliRunner()
    diff = runner.invoke(batch_app, ["compare", str(out), str(out), "--json"])
    assert diff.exit_code == 0, diff.output
    assert {r["change"] for r in json.loads(diff.stdout)["rows"]} == {"same"}
    other = runner.invoke(batch_app, batch_args(out, "--max-rounds", "2")[1:])
    assert other.exit_code == 2 and "other settings" in other.output


def _wait_for_summary(out: Path, proc: subprocess.Popen, timeout: float) -> list[Path]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = list(out.glob("problems/*/*/s0/summary.json"))
        if found:
            return found
        assert proc.poll() is None, "the batch ended before a task finished"
        time.sleep(0.2)
    raise AssertionError("no task finished in time")


def _session(sid: int) -> list[int]:
    found = subprocess.run(["ps", "-o", "pid=", "-s", str(sid)], capture_output=True, text=True).stdout
    return [int(p) for p in found.split()]


def test_sigterm_to_the_batch_ends_its_workers(tmp_path):
    """A batch stopped with SIGTERM (what a service manager sends) leaves no worker
    process and no sandboxed runner behind."""
    out = tmp_path / "run"
    batch = subprocess.Popen([*KFORGE, *batch_args(out, "--workers", "1")], cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while len(_session(batch.pid)) < 3 and time.monotonic() < deadline:  # batch, worker, runner
            assert batch.poll() is None, "the batch ended before its worker started"
            time.sleep(0.5)
        assert len(_session(batch.pid)) >= 3, "no worker and runner started"
        os.kill(batch.pid, signal.SIGTERM)
        batch.wait(timeout=30)
        deadline = time.monotonic() + 30
        while _session(batch.pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _session(batch.pid) == [], "processes of the batch outlived it"
    finally:
        for pid in _session(batch.pid):
            os.kill(pid, signal.SIGKILL)
