"""`kforge optimize` end to end: the CLI process, a scripted model served by a
separate loopback server process, the real SDK clients and the real judge."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.agents.search import scripted
from tests.conftest import ROOT, run_kforge


@pytest.fixture
def llm_server(tmp_path):
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps({"text": t}) + "\n" for t in scripted.SCRIPT))
    seen = tmp_path / "seen.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "tests.fakes.llm_server", "--port", "0", "--script", str(script),
                             "--requests-log", str(seen)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline().strip())
    yield port, seen
    proc.terminate()
    proc.wait(timeout=10)


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_optimize_repairs_a_compile_error_through_the_cli(llm_server, vendor, tmp_path):
    port, seen = llm_server
    base = f"http://127.0.0.1:{port}" + ("/v1" if vendor == "openai" else "")
    key = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}[vendor]
    out = tmp_path / "run"
    proc = run_kforge("optimize", str(scripted.PROBLEM), "--provider", vendor, "--base-url", base,
                      "--max-rounds", "1", "--candidates-per-round", "1", "--json", "--out", str(out),
                      "--device", "cpu", "--backend", "triton", env={key: "sk-secret-abc", "KFORGE_PROVIDER": "offline"})
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    llm = [c for r in summary["rounds"] for c in r["candidates"] if c["source"] == "llm"]
    assert [(c["id"], c["verdict"]) for c in llm] == [("r1-c0", "fail"), ("r1-c0-fix1", "pass")]
    assert any("SyntaxError" in r for r in llm[0]["reasons"])
    assert summary["best"]["verdict"] == "pass" and "ModelNew" in summary["best"]["code"]
    # Triton in its interpreter: the comparison says speed was not measured and invents no number.
    assert summary["comparison"]["fastest"] == "unknown" and summary["comparison"]["speedup_vs_eager"] is None
    assert summary["comparison"]["summary"] == "Speed not measured (Triton interpreter): correctness only."
    prompts = [json.loads(line) for line in seen.read_text().splitlines()]
    coder_calls = [p for p in prompts if "fused relu-scale kernel" in json.dumps(p["body"])]
    assert any("SyntaxError" in json.dumps(p["body"]) for p in coder_calls), "the error reached the coder"
    assert "sk-secret-abc" not in proc.stderr and "sk-secret-abc" not in proc.stdout
    assert (out / "trajectory.json").exists() and (out / "best.py").read_text() == summary["best"]["code"]


def test_optimize_rejects_bad_requests(tmp_path):
    proc = run_kforge("optimize", str(tmp_path / "missing.py"), "--json")
    assert proc.returncode == 2 and "missing.py" in json.loads(proc.stdout)["error"]
    proc = run_kforge("optimize", str(scripted.PROBLEM), "--backend", "opencl", "--json")
    assert proc.returncode == 2 and "--backend" in json.loads(proc.stdout)["error"]
