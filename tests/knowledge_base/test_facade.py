"""The KnowledgeBase facade: learning from a job, the archive, show, seeding, persistence and the
JSONL round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_base import FileStore, KnowledgeBase, UnknownStrategy, load_seed, problem_signature, seed_strategies

from .samples import SOFTMAX_REF, softmax_analysis, softmax_trajectory
from .test_problem_identity import SOFTMAX_RESIZED


def test_learn_from_adds_strategies_with_evidence_and_archives_the_winner(kb: KnowledgeBase) -> None:
    report = kb.learn_from(softmax_trajectory(), softmax_analysis(), "sm_90", "triton", "job-1")
    by_title = {s["title"]: s for s in report["strategies"]}
    assert by_title["Offline softmax template with tuned launch parameters"]["created"]
    assert by_title["Online softmax: running max and rescaled sum"]["matched_by"] == "id"
    assert report["archived"]["attempt_id"] == "r1-c0" and report["archived"]["speedup"] == 1.85
    seed = kb.show("seed-online-softmax", arch="sm_90")
    assert [(e["job_id"], e["attempt_id"], e["speedup"]) for e in seed["evidence"]] == [("job-1", "r1-c0", 1.85)]
    assert seed["evidence_summary"].startswith("1 run on 1 problem: 1 passed, mean speedup 1.85x")
    # the planner now sees the evidence next to the strategy, and where the strategy came from
    got = {s["id"]: s for s in kb.retrieve(softmax_analysis(), SOFTMAX_REF, "triton", k=8)}
    assert "1.85x" in got["seed-online-softmax"]["evidence_summary"]
    assert {s["source"] for s in got.values()} >= {"seed", "learned:offline"}
    # a new job on the same problem at other sizes starts from the archived winner
    entry = kb.archived(SOFTMAX_RESIZED)
    assert entry is not None and entry.attempt_id == "r1-c0" and entry.code.startswith("# kernel r1-c0")
    assert entry.signature == problem_signature(SOFTMAX_REF) and entry.job_id == "job-1"
    assert kb.archived(SOFTMAX_REF.replace("torch.softmax", "torch.log_softmax")) is None


def test_archive_keeps_the_best_per_architecture(kb: KnowledgeBase) -> None:
    kb.learn_from(softmax_trajectory(), softmax_analysis(), "sm_90", "triton", "job-1")
    slower = softmax_trajectory()
    for r in slower["rounds"]:
        for a in r["attempts"]:
            a["speedup"] = 1.1 if a["verdict"] == "pass" else None
    assert kb.learn_from(slower, softmax_analysis(), "sm_90", "triton", "job-2")["archived"] is None
    assert kb.archived(SOFTMAX_REF).job_id == "job-1"  # type: ignore[union-attr]
    kb.learn_from(slower, softmax_analysis("NVIDIA A100 (sm_80)"), "sm_80", "triton", "job-3")
    assert kb.archived(SOFTMAX_REF, arch="sm_80").job_id == "job-3"  # type: ignore[union-attr]
    assert kb.archived(SOFTMAX_REF, arch="sm_90").job_id == "job-1"  # type: ignore[union-attr]
    assert kb.archived(SOFTMAX_REF, arch="sm_75").speedup == 1.85  # type: ignore[union-attr]
    assert kb.archived(SOFTMAX_REF, backend="cuda") is None


def test_on_cpu_the_first_passing_kernel_is_archived_without_a_speedup(kb: KnowledgeBase) -> None:
    traj = softmax_trajectory()
    for r in traj["rounds"]:
        for a in r["attempts"]:
            a["speedup"] = None
    cpu = softmax_analysis("CPU only: Triton runs in its interpreter; no GPU timing")
    report = kb.learn_from(traj, cpu, "cpu", "triton", "job-cpu")
    assert report["archived"] == {"signature": problem_signature(SOFTMAX_REF), "attempt_id": "r0-c0",
                                  "speedup": None, "arch": "cpu"}
    # a measured GPU result later is archived beside it, and preferred where no arch is asked for
    kb.learn_from(softmax_trajectory(), softmax_analysis(), "sm_90", "triton", "job-gpu")
    assert kb.archived(SOFTMAX_REF).speedup == 1.85  # type: ignore[union-attr]
    assert kb.archived(SOFTMAX_REF, arch="cpu").speedup is None  # type: ignore[union-attr]


def test_a_job_without_a_passing_kernel_archives_nothing(kb: KnowledgeBase) -> None:
    traj = softmax_trajectory()
    for r in traj["rounds"]:
        for a in r["attempts"]:
            a["verdict"], a["speedup"] = "fail", None
    report = kb.learn_from(traj, softmax_analysis(), "sm_90", "triton", "job-1")
    assert report["archived"] is None and kb.archived(SOFTMAX_REF) is None
    offline = kb.show(next(s["id"] for s in report["strategies"] if s["source"] == "learned:offline"))
    assert offline["confidence"] < 0.5 and "0 passed" in offline["evidence_summary"]


def test_seed_loading_is_idempotent_and_show_reports_unknown_ids(kb: KnowledgeBase) -> None:
    assert kb.stats()["by_source"] == {"seed": len(seed_strategies())}
    assert load_seed(kb.store, kb.embedder) == 0
    with pytest.raises(UnknownStrategy):
        kb.show("seed-no-such-thing")


def test_the_store_persists_across_reopening(tmp_path: Path, embedder) -> None:
    path = tmp_path / "kb.sqlite"
    kb = KnowledgeBase(FileStore(path), embedder)
    kb.learn_from(softmax_trajectory(), softmax_analysis(), "sm_90", "triton", "job-1")
    before, count = kb.show("seed-online-softmax"), kb.stats()["strategies"]
    kb.store.close()  # type: ignore[attr-defined]
    again = KnowledgeBase.open(path, embedder)
    assert again.show("seed-online-softmax") == before
    assert again.archived(SOFTMAX_REF) is not None
    assert again.stats()["strategies"] == count


def test_export_import_round_trip(kb: KnowledgeBase, tmp_path: Path, embedder) -> None:
    kb.learn_from(softmax_trajectory(), softmax_analysis(), "sm_90", "triton", "job-1")
    dump = tmp_path / "kb.jsonl"
    lines = kb.export_jsonl(dump)
    assert lines == kb.stats()["strategies"] + 1  # one archive entry
    fresh = KnowledgeBase(FileStore(tmp_path / "other.sqlite"), embedder, seed=False)
    assert fresh.import_jsonl(dump) == lines
    assert {s.id: s.to_dict() for s in fresh.store.all()} == {s.id: s.to_dict() for s in kb.store.all()}
    assert fresh.archived(SOFTMAX_REF) == kb.archived(SOFTMAX_REF)
    fresh.import_jsonl(dump)  # importing again duplicates nothing
    assert len(fresh.show("seed-online-softmax")["evidence"]) == 1
    assert fresh.search("online softmax running max", k=1)[0]["id"] == "seed-online-softmax"  # re-embedded
    again = tmp_path / "again.jsonl"
    fresh.export_jsonl(again)
    assert again.read_text() == dump.read_text()
