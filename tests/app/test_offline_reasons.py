"""The offline engine's reason for having no proposal, where the app shows it: the
batch record of a problem, and `kforge problems list --families` (the sandboxed
analysis of every problem, then the engine's plan)."""

from __future__ import annotations

import json

from app.batch.task import TaskSpec, run_task
from tests.agents.offline.test_bundled import ref
from tests.agents.offline.test_plan import FLIP
from tests.conftest import run_kforge

RELU = ref("""
    class Model(nn.Module):
        def forward(self, x):
            return torch.relu(x) * 2.0
    """, "[torch.randn(rows, cols)]", sizes="rows = 5\ncols = 37")


def test_a_batch_record_without_a_proposal_carries_the_reason(tmp_path) -> None:
    path = tmp_path / "1_flip.py"
    path.write_text(FLIP)
    spec = TaskSpec(problem={"id": "level1/1_flip", "name": "1_flip", "level": 1, "path": str(path), "error": None},
                    sample=0, out=str(tmp_path / "out"), provider="offline", model=None, base_url=None,
                    config={"backend": "cpu", "max_rounds": 1, "offline_starters": 2},
                    options={"device": "cpu"}, held_out=False)
    record = run_task(spec)
    assert record["status"] == "done" and record["search_found"] is False
    assert record["stop_reason"].startswith("no offline proposal: no family for flip")
    assert record["offline"]["reason"].startswith("no family for flip")


def test_problems_list_families_names_the_family_or_the_reason(tmp_path) -> None:
    (tmp_path / "1_relu.py").write_text(RELU)
    (tmp_path / "2_flip.py").write_text(FLIP)
    (tmp_path / "3_broken.py").write_text("this is not python")
    proc = run_kforge("problems", "list", str(tmp_path), "--json", "--families", "--backend", "cpu")
    assert proc.returncode == 0, proc.stderr
    found = {p["name"]: p for p in json.loads(proc.stdout)}
    assert found["1_relu"]["offline"]["family"] == "elementwise" and found["1_relu"]["offline"]["backend"] == "cpu"
    assert found["2_flip"]["offline"]["family"] is None
    assert found["2_flip"]["offline"]["reason"].startswith("no family for flip")
    assert "error" in found["3_broken"] and "offline" not in found["3_broken"]
    plain = json.loads(run_kforge("problems", "list", str(tmp_path), "--json").stdout)
    assert all("offline" not in p for p in plain)  # opt-in: nothing runs without the flag
