"""`kforge batch run --kb use`: a batch search retrieves the strategies an
earlier job learned (the real knowledge base, the offline engine), and the
report says which knowledge-base mode the run used."""

from __future__ import annotations

import json

from app.batch.run import task_dir
from tests.conftest import ROOT, run_kforge

GELU = ROOT / "problems" / "level1" / "2_gelu.py"


def test_batch_search_uses_a_strategy_learned_by_an_earlier_job(tmp_path):
    env = {"KFORGE_DATA_DIR": str(tmp_path / "data"), "KFORGE_PROVIDER": "offline"}
    # Both runs name the backend triton (auto would pick cpu here, whose seed strategies outrank one lesson).
    first = run_kforge("optimize", str(GELU), "--max-rounds", "0", "--json", "--device", "cpu", "--backend", "triton",
                       env=env)
    assert first.returncode in (0, 1), first.stderr
    learned = json.loads(first.stdout)["learned"]["strategies"]
    assert learned

    out = tmp_path / "run"
    proc = run_kforge("batch", "run", str(ROOT / "problems"), "--level", "1", "--problems", "2_*",
                      "--provider", "offline", "--max-rounds", "0", "--offline-starters", "1", "--device", "cpu",
                      "--backend", "triton", "--no-held-out", "--out", str(out),
                      "--kb", "use", "--json", env=env)
    assert proc.returncode in (0, 1), proc.stderr
    traj = json.loads((task_dir(out, "level1/2_gelu", 0) / "trajectory.json").read_text())
    assert learned[0]["id"] in [s["id"] for s in traj["strategies_used"]]
    report = json.loads((out / "report.json").read_text())
    assert report["run"]["kb"] == "use"
    assert "knowledge base `use`" in (out / "report.md").read_text()


def test_kb_mode_is_checked():
    proc = run_kforge("batch", "run", str(ROOT / "problems"), "--kb", "sometimes", "--json")
    assert proc.returncode == 2
    assert "--kb 'sometimes'" in json.loads(proc.stdout)["error"]
