"""The dashboard in Debian's Chromium (Playwright) for the cpu backend, served
by uvicorn in this process on a migrated SQLite file: a job whose candidates
were timed on the CPU draws its speedup chart with a caption naming the CPU;
the jobs list filters by backend cpu; a batch run timed on the CPU draws fast_p
past 0, says what it was timed on and shows the sizes of a problem scaled by
--fit-memory; the knowledge base's archive shows CPU speedups with their
hardware key."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from sqlalchemy.orm import Session

from app.api.main import create_app
from app.auth.tokens import create_token
from app.batch.reporting.report import write_reports
from app.db.migrate import upgrade_database
from app.db.models import Candidate, Job
from app.db.session import engine_for
from app.deps import settings as settings_dep
from app.kb.sql_store import SqlStore
from app.settings import Settings
from app.web.batch_runs import batch_dir
from knowledge_base.model import ArchiveEntry
from tests.app.batch.test_cpu_reports import cpu_run
from tests.app.service.conftest import free_port
from tests.app.web.test_pages import shot, sign_in

CPU_LABEL = "cpu wall time: AMD EPYC 7B13, 2 threads (OpenMP), caches flushed"
CHECKS = {"compile": "pass", "correctness": "pass"}


def timing(speedup: float) -> dict[str, Any]:
    """The judge's timing of a native candidate on the CPU."""
    return {"device": "cpu", "label": CPU_LABEL,
            "candidate": {"median_ms": 5.3, "q1_ms": 5.2, "q3_ms": 5.4, "reps": 30},
            "baseline_eager": {"median_ms": 5.3 * speedup, "q1_ms": 5.2 * speedup, "q3_ms": 5.4 * speedup, "reps": 30},
            "speedup_vs_eager": {"value": speedup, "low": speedup * .95, "high": speedup * 1.05},
            "speedup_vs_compile": {"value": speedup / 3, "low": speedup / 3.2, "high": speedup / 2.8}}


# A tuning pass as sandbox.tuning.TuneResult.to_json writes it, with the search's proposals.
TUNING = {"variants": [{"index": 0, "status": "timed", "median_ms": 0.61, "times_ms": [0.6, 0.61, 0.62], "detail": ""},
                       {"index": 1, "status": "timed", "median_ms": 0.42, "times_ms": [0.41, 0.42, 0.43], "detail": ""},
                       {"index": 2, "status": "wrong", "median_ms": None, "times_ms": [],
                        "detail": "output 0: max abs diff 0.5"}],
          "eager_ms": 2.5, "elapsed_s": 1.7, "build_s": 1.1, "label": "cpu: AMD EPYC 7B13, 2 thread(s)",
          "counts": {"timed": 2, "wrong": 1, "error": 0, "policy": 0, "build": 0}, "order": [1, 0, 2],
          "proposals": [{"family": "elementwise", "params": {"BLOCK": 16384}},
                        {"family": "elementwise", "params": {"BLOCK": 4096}},
                        {"family": "elementwise", "params": {"BLOCK": 2048}}]}


LOSING = {"device": "cpu", "label": CPU_LABEL,
          "candidate": {"median_ms": 1.0, "q1_ms": 0.98, "q3_ms": 1.02, "reps": 30},
          "baseline_eager": {"median_ms": 0.87, "q1_ms": 0.86, "q3_ms": 0.88, "reps": 30},
          "baseline_compile": {"median_ms": 0.87 / 2.1, "q1_ms": 0.41, "q3_ms": 0.42, "reps": 30},
          "speedup_vs_eager": {"value": 0.87, "low": 0.84, "high": 0.9},
          "speedup_vs_compile": {"value": 0.87 / 2.1, "low": 0.4, "high": 0.43}}


PIPELINE = "offline: pipeline {'rank': 0}"


@pytest.fixture
def site(tmp_path: Path) -> Iterator[dict[str, Any]]:
    url = f"sqlite:///{tmp_path / 'kforge.db'}"
    upgrade_database(url)
    with Session(engine_for(url)) as s, s.begin():
        alice, token = create_token(s, "alice")
        job = Job(owner_id=alice.id, problem_name="gelu_sigmoid_fusion", reference="class Model: pass\n",
                  backend="cpu", status="succeeded", queue="cpu", config={"max_rounds": 1, "device": "cpu"},
                  best_attempt_id="r1-c0", best_speedup=10.3, result={"tuning": TUNING})
        s.add(job)
        # A kernel slower than eager, with torch.compile fastest of the three (recorded judge timing).
        # ... whose best kernel is the offline engine's pipeline: its regions (the round-0 plan's stages)
        losing = Job(owner_id=alice.id, problem_name="relu_scale_losing", reference="class Model: pass\n",
                     backend="cpu", status="succeeded", queue="cpu", config={"max_rounds": 0, "device": "cpu"},
                     best_attempt_id="r0-c0", best_speedup=0.87,
                     trajectory={"rounds": [{"index": 0, "plan": [
                         {"title": PIPELINE, "rationale": "conv + relu | reshape | permute (0, 2, 1) | matmul + add; "
                                                          "rank=0"}]}]})
        s.add(losing)
        s.add(Job(owner_id=alice.id, problem_name="a_triton_job", reference="class Model: pass\n", status="succeeded",
                  queue="cpu", config={}))
        s.flush()
        s.add_all([Candidate(job_id=job.id, attempt_id="r0-c0", round=0, source="offline", verdict="pass",
                             checks=CHECKS, speedup=3.6, timing=timing(3.6), code="SRC = '...'\n"),
                   Candidate(job_id=job.id, attempt_id="r1-c0", round=1, source="offline", verdict="pass",
                             checks=CHECKS, speedup=10.3, timing=timing(10.3), code="SRC = '...'\n")])
        s.add(Candidate(job_id=losing.id, attempt_id="r0-c0", round=0, source="offline", verdict="pass",
                        checks=CHECKS, speedup=0.87, timing=LOSING, code="SRC = '...'\n", strategy=PIPELINE))
        job_id, losing_id = job.id, losing.id
    SqlStore(url).archive_put(ArchiveEntry(signature="sig-gelu", problem="gelu_sigmoid_fusion", code="x", speedup=10.3,
                                           arch="cpu", backend="cpu", job_id=job_id, attempt_id="r1-c0"))
    runs = tmp_path / "runs"
    write_reports(runs / "kernelbench-cpu", cpu_run(), {"suite": "/x/KernelBench", "provider": "offline",
                                                        "device": "cpu", "sandbox": "process",
                                                        "config": {"backend": "cpu"}, "fit_memory_gb": 1.0})
    app = create_app()
    settings = Settings(database_url=url, data_dir=tmp_path)
    app.dependency_overrides[settings_dep] = lambda: settings  # the one settings dependency (API and dashboard)
    app.dependency_overrides[batch_dir] = lambda: runs
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield {"url": f"http://127.0.0.1:{port}", "token": token, "job": job_id, "losing": losing_id}
    server.should_exit = True
    thread.join(timeout=10)


def test_cpu_numbers_are_shown_and_labelled_as_cpu(browser, site):
    url = site["url"]
    context, page = sign_in(browser, url, site["token"])
    try:
        page.goto(f"{url}/jobs?backend=cpu")
        listed = page.inner_text("main")
        assert "gelu_sigmoid_fusion" in listed and "a_triton_job" not in listed
        assert page.eval_on_selector("select[name=backend]", "e => [...e.options].map(o => o.value)")[-1] == "cpu"

        page.goto(f"{url}/jobs/{site['job']}")
        assert page.is_visible("svg.chart") and not page.is_visible("#no-gpu")
        assert "10.30×" in page.inner_text("#best-speedup") and page.inner_text("#best-timing") == "CPU"
        caption = page.inner_text("#timing-caption")
        assert "CPU timing" in caption and "AMD EPYC 7B13, 2 threads" in caption and "not GPU speed" in caption
        assert "no GPU timing" not in page.inner_text("main")
        # the tuning pass: how many variants, the fastest first, the wrong one last with why
        tuning = page.inner_text("#tuning")
        assert "3 variants in 1.7 s: 2 timed, 1 wrong; eager 2.5000 ms" in tuning, tuning
        rows = page.eval_on_selector_all("#tuning tbody tr", "rs => rs.map(r => r.cells[0].innerText)")
        assert rows == ["1", "0", "2"] and "max abs diff 0.5" in tuning
        shot(page, "job_cpu.png")

        page.goto(f"{url}/batch/kernelbench-cpu")
        main = page.inner_text("main")
        assert page.locator("svg.chart polyline").count() == 2  # fast_p vs eager and vs compile, past p = 0
        assert "CPU wall time of native kernels on AMD EPYC 7B13, 2 threads" in page.inner_text("#timing-kind")
        assert "1 GB per call; 1 scaled" in page.inner_text("#fit-memory")
        row = page.inner_text("tr[data-problem='level1/19_relu']")
        assert "batch_size 4096→768, dim 393216→65536" in row and "1.20×" in row
        assert "default" in page.inner_text("tr[data-problem='level1/1_a']")
        assert "no GPU timing" not in main and "66.7%" in main  # fast_1 vs eager: 2 of 3
        # 1_a: 3.0x eager and torch.compile 2.0x eager, a kernel won; 19_relu: torch.compile is faster still
        assert page.inner_text("#kernel-won").startswith("a kernel won 1 of 3 (kernel 1, eager 0, torch.compile 1")
        assert page.inner_text("tr[data-problem='level1/19_relu'] td.fastest") == "torch.compile"
        assert page.inner_text("tr[data-problem='level1/1_a'] td.fastest") == "kernel"
        shot(page, "batch_run_cpu.png")

        page.goto(f"{url}/batch")
        assert "(CPU timed)" in page.inner_text("tr[data-run='kernelbench-cpu']")
        assert page.locator("svg.chart polyline").count() == 1

        page.goto(f"{url}/kb/archive")
        row = page.inner_text("tr[data-archive='gelu_sigmoid_fusion|cpu|cpu']")
        assert "10.30×" in row and "CPU" in row
        page.goto(f"{url}/kb?backend=cpu")
        assert page.eval_on_selector("select[name=backend]", "e => e.value") == "cpu"
    finally:
        context.close()


def test_a_kernel_slower_than_eager_is_not_presented_as_a_win(browser, site):
    url = site["url"]
    # The REST job names the fastest of the three and what to use.
    auth = {"Authorization": f"Bearer {site['token']}"}
    losing = httpx.get(f"{url}/v1/jobs/{site['losing']}", headers=auth).json()["comparison"]
    assert losing["fastest"] == "torch.compile" and losing["kernel_beats_eager"] is False
    assert losing["recommendation"] == ("Keep the reference: no kernel beat eager PyTorch (best 0.87x); "
                                        "torch.compile is 2.10x faster than eager here, use it.")
    winning = httpx.get(f"{url}/v1/jobs/{site['job']}", headers=auth).json()["comparison"]
    assert winning["fastest"] == "kernel" and winning["recommendation"].startswith("Use the kernel: 10.3x faster")
    # A whole model's kernel: its regions, in forward order (none for a single-family kernel).
    regions = httpx.get(f"{url}/v1/jobs/{site['losing']}", headers=auth).json()["regions"]
    assert regions == [{"index": 1, "kernel": "conv + relu"}, {"index": 2, "kernel": "reshape"},
                       {"index": 3, "kernel": "permute (0, 2, 1)"}, {"index": 4, "kernel": "matmul + add"}]
    assert httpx.get(f"{url}/v1/jobs/{site['job']}", headers=auth).json()["regions"] == []

    context, page = sign_in(browser, url, site["token"])
    try:
        page.goto(f"{url}/jobs/{site['losing']}")
        assert page.inner_text("#best-slower") == "Slower than eager — keep the reference"
        assert page.inner_text("#best-recommendation") == losing["recommendation"]
        assert "Fastest: torch.compile" in page.inner_text("#best-comparison")
        rows = page.eval_on_selector_all("#regions tbody tr", "rs => rs.map(r => r.innerText)")
        assert [r.split() for r in rows][0] == ["1", "conv", "+", "relu"] and len(rows) == 4
        shot(page, "job_cpu_slower_than_eager.png")
        page.goto(f"{url}/jobs/{site['job']}")
        assert page.locator("#best-slower").count() == 0 and page.locator("#regions").count() == 0
        assert page.inner_text("#best-recommendation").startswith("Use the kernel")
    finally:
        context.close()
