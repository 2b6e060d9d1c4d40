"""The knowledge base in the loop: a job's lessons are stored when it ends,
the next job on a similar problem gets them in its plan, and an identical
problem starts from the archived kernel."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.agents.search import scripted
from tests.conftest import ROOT, run_kforge

GELU = ROOT / "problems" / "level1" / "2_gelu.py"
DISTIL = ('```json\n{"strategies": [{"title": "Fuse relu and scale in one pass", "summary": "one kernel", '
          '"rationale": "one read, one write", "op_families": ["elementwise"], "backends": ["triton"], '
          '"attempt_ids": ["r1-c0"]}]}\n```')


def optimize(env: dict, *args: str) -> dict:
    # The scripted model writes Triton: the backend is named (auto would pick cpu on the CPU).
    proc = run_kforge("optimize", *args, "--json", "--device", "cpu", "--backend", "triton", env=env)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def test_lessons_are_stored_retrieved_and_the_archive_is_used(tmp_path):
    env = {"KFORGE_DATA_DIR": str(tmp_path / "data"), "KFORGE_PROVIDER": "offline"}
    first = optimize(env, str(GELU), "--max-rounds", "0")
    assert first["best"] is not None
    learned = first["learned"]["strategies"]
    assert learned and learned[0]["source"] == "learned:offline"
    assert first["learned"]["archived"]["attempt_id"] == first["best"]["id"]

    # The same problem again: it starts from the archived winner, judged again.
    second = optimize(env, str(GELU), "--max-rounds", "0")
    first_attempt = second["rounds"][0]["candidates"][0]
    assert first_attempt["id"] == "r0-archive" and first_attempt["verdict"] == "pass"
    assert first_attempt["source"] == "archive"

    hits = json.loads(run_kforge("kb", "search", "elementwise kernel launch parameters", "--json", env=env).stdout)
    assert any(h["id"] == learned[0]["id"] for h in hits)
    assert all({"id", "title", "score"} <= set(h) for h in hits)

    # A similar problem with an LLM: the learned strategy is in the planner's prompt.
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps({"text": t}) + "\n" for t in
                              [scripted.PLAN, scripted.CODER_FIXED, scripted.REVIEW, DISTIL]))
    seen = tmp_path / "seen.jsonl"
    server = subprocess.Popen([sys.executable, "-m", "tests.fakes.llm_server", "--port", "0", "--script", str(script),
                               "--requests-log", str(seen)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())
        third = optimize({**env, "OPENAI_API_KEY": "sk-x"}, str(scripted.PROBLEM), "--provider", "openai",
                         "--base-url", f"http://127.0.0.1:{port}/v1", "--max-rounds", "1",
                         "--candidates-per-round", "1")
    finally:
        server.terminate()
        server.wait()
    assert learned[0]["id"] in [s["id"] for s in third["strategies_used"]]
    planner = json.loads(seen.read_text().splitlines()[0])
    assert learned[0]["title"] in json.dumps(planner["body"])
    # That run's own lessons were distilled by the model and stored.
    assert third["learned"]["distilled_by"] == "llm"
    assert any(s["title"] == "Fuse relu and scale in one pass" for s in third["learned"]["strategies"])
