"""`kforge selftest --device cpu --quick --json` through the real CLI: one JSON object,
a verdict per part, the bundled solutions and the red-team cheats as expected, and
the report files written. Timing quality may only warn here: the test host is shared.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
KFORGE = REPO / ".venv" / "bin" / "kforge"
pytestmark = pytest.mark.skipif(not KFORGE.exists(), reason=f"{KFORGE} is not installed")


def run(*args: str, tmp_path: Path, timeout: int = 600) -> tuple[int, dict]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([str(KFORGE), "selftest", *args, "--json", "--out", str(tmp_path)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)
    try:
        return proc.returncode, json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"stdout is not one JSON object; exit {proc.returncode}; stderr: {proc.stderr[-2000:]}")


def test_quick_cpu_selftest(tmp_path: Path) -> None:
    code, report = run("--device", "cpu", "--quick", tmp_path=tmp_path)
    assert report["device"] == "cpu" and report["quick"] is True
    assert set(report["parts"]) == {"ceilings", "solutions", "redteam", "engine", "timing"}
    ceilings = report["parts"]["ceilings"]["numbers"]  # measured first, with the judge's threads
    assert ceilings["bandwidth_gbs"]["triad"]["best"] > 0 and ceilings["gemm_fp32_gflops"]["best"] > 0
    assert ceilings["cached"] is False and ceilings["machine"]["threads"] >= 1
    for part in report["parts"].values():
        assert part["verdict"] in ("pass", "warn", "fail") and isinstance(part["summary"], str)
    solutions, redteam = report["parts"]["solutions"], report["parts"]["redteam"]
    assert solutions["verdict"] == "pass", solutions
    assert {c["expected"] for c in solutions["cases"]} == {"pass", "fail"}
    assert redteam["verdict"] == "pass", redteam
    assert any(c["caught_by"] for c in redteam["cases"]) and all(c["verdict"] == "fail" for c in redteam["cases"])
    timing = report["parts"]["timing"]["numbers"]
    assert timing["independent_timer"] == "torch.utils.benchmark.Timer" and timing["spread"] >= 0
    cost = timing["judge_cost_s"]  # where a judge run spends its time, by phase
    assert cost["total_s"] > 0 and cost["candidate_job_s"] > 0 and cost["reference_job_s"] > 0
    assert code == (0 if report["verdict"] == "pass" else 1)
    assert Path(report["report_files"]["json"]).exists() and Path(report["report_files"]["markdown"]).exists()


def test_cuda_without_a_gpu_is_a_clear_error(tmp_path: Path) -> None:
    if shutil.which("nvidia-smi"):
        pytest.skip("a GPU may be present")
    code, report = run("--device", "cuda", tmp_path=tmp_path, timeout=120)
    assert (code, report["verdict"]) == (2, "error") and "CUDA" in report["reasons"][0]
