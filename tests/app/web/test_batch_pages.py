"""Batch pages from report.json files written by app/batch (its own
write_reports, so the pages follow the real format): the leaderboard ranks
runs and draws fast_p curves from GPU-timed runs; a CPU-only run says "no GPU
timing" instead; a run's page has its metrics and per-problem table; names
outside the runs folder are missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.api.main import create_app
from app.auth.tokens import create_token
from app.batch.reporting.report import write_reports
from app.db.migrate import upgrade_database
from app.db.session import engine_for
from app.deps import settings as settings_dep
from app.errors import NotFound
from app.settings import Settings
from app.web.batch_runs import batch_dir, load_run


def record(problem: str, correct: bool, device: str, eager: float | None = None, compile_: float | None = None) -> dict:
    return {"problem": problem, "name": problem.split("/")[-1], "level": 1, "sample": 0, "correct": correct,
            "status": "done", "device": device, "speedup_eager": eager, "speedup_compile": compile_,
            "held_out": {"status": "pass"} if correct else None, "input_tokens": 900, "output_tokens": 100,
            "cost_usd": 0.01, "wall_s": 12.0, "best": {"id": "r1-c0"} if correct else None,
            "final": {"reasons": [] if correct else ["correctness: 12 of 4096 elements differ <b>"]}}


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    gpu = [record("level1/1_relu_scale", True, "cuda", 1.8, 1.2), record("level1/10_softmax", True, "cuda", 0.9, 0.7),
           record("level1/19_matmul", False, "cuda")]
    write_reports(root / "h100-gpt", gpu, {"suite": "/x/problems", "provider": "openai", "model": "gpt-4.1",
                                           "device": "cuda", "sandbox": "process", "config": {"max_rounds": 3}})
    write_reports(root / "cpu-offline", [record("level1/1_relu_scale", True, "cpu")],
                  {"suite": "/x/problems", "provider": "offline", "device": "cpu", "sandbox": "process", "config": {}})
    (root / "not-a-run").mkdir()
    (root / "broken").mkdir()
    (root / "broken" / "report.json").write_text(json.dumps({"format": "something else"}))
    return root


@pytest.fixture
def client(tmp_path: Path, runs: Path):
    url = f"sqlite:///{tmp_path / 'kforge.db'}"
    upgrade_database(url)
    with Session(engine_for(url)) as s, s.begin():
        _, token = create_token(s, "alice")
    app = create_app()
    app.dependency_overrides[settings_dep] = lambda: Settings(database_url=url, data_dir=tmp_path)
    app.dependency_overrides[batch_dir] = lambda: runs
    with TestClient(app, headers={"Authorization": f"Bearer {token}"}) as c:
        yield c


def test_leaderboard_ranks_runs_and_draws_fast_p_curves(client):
    page = client.get("/batch").text
    assert page.index('data-run="h100-gpt"') < page.index('data-run="cpu-offline"')
    assert "not-a-run" not in page and "broken" not in page
    assert "66.7%" in page and "33.3%" in page  # correctness 2/3, fast_1 eager 1/3
    svg = page[page.index('<svg class="chart"'):page.index("</svg>")]
    assert svg.count("<polyline") == 2 and "h100-gpt: fast_1 = 33.3%" in svg
    assert "cpu-offline: fast_0 = 100.0%" in svg  # a CPU run has fast_0 only


def test_run_page_has_metrics_and_problems(client):
    page = client.get("/batch/h100-gpt").text
    for text in ("level1/19_matmul", "1.80×", "not correct", "gpt-4.1", "fast_p vs compile", "&lt;b&gt;"):
        assert text in page, text
    assert page.count("<polyline") == 2  # eager and compile, per sample
    cpu = client.get("/batch/cpu-offline").text
    assert 'id="no-gpu"' in cpu and "no GPU timing" in cpu and "<polyline" not in cpu


def test_names_outside_the_runs_folder_are_missing(client, runs):
    for name in ("...", "not-a-run", "broken", "..%2F..%2Fetc", ".hidden", "h100-gpt%2F..%2Fcpu-offline"):
        assert client.get(f"/batch/{name}").status_code == 404, name
    for name in ("..", "../runs/h100-gpt", "/etc"):
        with pytest.raises(NotFound):
            load_run(runs, name)
