"""Distilling strategies from a trajectory, merging duplicates, and a confidence that follows
outcomes, age and architecture."""

from __future__ import annotations

import json

from knowledge_base import Evidence, FileStore, KnowledgeBase, Strategy, applies_to, confidence, distil, merge
from knowledge_base.confidence import ConfidencePolicy, evidence_summary
from knowledge_base.distil import distil_prompt, parse_reply

from .samples import softmax_analysis, softmax_trajectory

NOW = 1_800_000_000.0
DAY = 86400.0


def strategy(evidence: list[Evidence], source: str = "learned:llm", title: str = "Some strategy") -> Strategy:
    return Strategy("kb-x", title, "summary", "rationale", applies_to(["softmax"]), source, evidence, NOW, NOW)


def ev(n: int, verdict: str = "pass", speedup: float | None = 1.5, arch: str = "sm_90", at: float = NOW) -> Evidence:
    return Evidence(f"job-{n}", "p.py", "v1:x", f"r1-c{n}", speedup, verdict, arch, "triton", at)


def test_confidence_follows_outcomes() -> None:
    prior = confidence(strategy([]), NOW)
    wins = confidence(strategy([ev(i, speedup=2.0) for i in range(4)]), NOW)
    modest = confidence(strategy([ev(i, speedup=1.2) for i in range(4)]), NOW)
    failures = confidence(strategy([ev(i, "fail", None) for i in range(4)]), NOW)
    slower = confidence(strategy([ev(i, speedup=0.6) for i in range(4)]), NOW)
    assert failures < slower < prior < modest < wins <= 1.0
    mixed = confidence(strategy([ev(0, speedup=2.0), ev(1, "fail", None)]), NOW)
    assert failures < mixed < wins
    assert confidence(strategy([], source="seed"), NOW) > prior  # curated strategies start higher


def test_confidence_decays_towards_the_prior_with_age() -> None:
    fresh = strategy([ev(i, speedup=2.0, at=NOW) for i in range(3)])
    old = strategy([ev(i, speedup=2.0, at=NOW - 365 * DAY) for i in range(3)])
    prior = confidence(strategy([]), NOW)
    assert prior < confidence(old, NOW) < confidence(fresh, NOW)
    quick = ConfidencePolicy(half_life_days=7.0)
    assert confidence(old, NOW, policy=quick) - prior < 0.01


def test_evidence_from_another_architecture_needs_revalidation() -> None:
    s = strategy([ev(i, speedup=2.0, arch="sm_80") for i in range(3)])
    assert confidence(s, NOW, "sm_90") < confidence(s, NOW, "sm_80")
    assert "re-validate on sm_90" in evidence_summary(s, "sm_90")
    assert "re-validate" not in evidence_summary(s, "sm_80")
    s.evidence.append(ev(9, speedup=2.0, arch="sm_90"))
    assert "re-validate" not in evidence_summary(s, "sm_90")


def test_evidence_summary_counts_runs_speedups_and_regressions() -> None:
    s = strategy([ev(0, speedup=2.0), ev(1, speedup=0.8), ev(2, "fail", None)])
    text = evidence_summary(s)
    assert text.startswith("3 runs on 1 problem: 2 passed")
    assert "mean speedup 1.40x" in text and "1 regression" in text and "1 failed" in text
    cpu = strategy([ev(0, speedup=None, arch="cpu")])
    assert "speed not measured" in evidence_summary(cpu)


def test_evidence_carries_the_kernels_fraction_of_its_roofline_bound() -> None:
    traj = softmax_trajectory()
    attempts = [a for r in traj["rounds"] for a in r["attempts"]]
    attempts[0]["roofline"] = {"bound_by": "memory", "parties": {"kernel": {"fraction": 0.86}, "eager": {"fraction": 0.4}}}
    out = distil(traj, softmax_analysis(), "cpu", "cpu", job_id="job-1", now=NOW)
    evidence = {e.attempt_id: e for s in out for e in s.evidence}
    assert evidence[attempts[0]["id"]].fraction == 0.86
    assert all(e.fraction is None for k, e in evidence.items() if k != attempts[0]["id"])
    near = strategy([ev(0), Evidence("job-1", "q.py", "v1:y", "r0-c0", 1.2, "pass", "cpu", "cpu", NOW, 0.86)])
    assert "at best 86% of the machine's roofline bound (on q.py): little headroom left" in evidence_summary(near)
    far = strategy([Evidence("job-1", "q.py", "v1:y", "r0-c0", 1.2, "pass", "cpu", "cpu", NOW, 0.3)])
    assert "30% of the machine's roofline bound (on q.py): headroom left" in evidence_summary(far)
    assert "roofline" not in evidence_summary(strategy([ev(0)]))  # no ceilings kept where it ran


def test_distil_offline_attempts_from_templates_and_tuned_parameters() -> None:
    out = distil(softmax_trajectory(), softmax_analysis(), "sm_90", "triton", job_id="job-1", now=NOW)
    offline = [s for s in out if s.source == "learned:offline"]
    assert len(offline) == 1
    (s,) = offline
    assert s.applies_to["op_families"] == ["softmax"] and s.applies_to["backends"] == ["triton"]
    assert "MAX_BLOCK=8192, num_warps=8" in s.summary and "1.62x" in s.summary and "1.31x" in s.summary
    assert sorted((e.attempt_id, e.speedup) for e in s.evidence) == [("r0-c0", 1.31), ("r0-c1", 1.62)]
    assert all(e.job_id == "job-1" and e.arch == "sm_90" and e.signature.startswith("v1:") for e in s.evidence)


def test_distil_without_a_model_keeps_plan_entries_and_repairs_count_once() -> None:
    out = distil(softmax_trajectory(), softmax_analysis(), "sm_90", "triton", job_id="job-1", now=NOW)
    llm = {s.title: s for s in out if s.source == "learned:llm"}
    cited = llm["Online softmax in one read [seed-online-softmax]"]
    assert cited.id == "seed-online-softmax"  # the plan cited a retrieved strategy by id
    atomics = llm["Two-kernel softmax with atomics for the row sums"]
    assert [(e.attempt_id, e.verdict, e.speedup) for e in atomics.evidence] == [("r1-c1-fix1", "pass", 0.74)]


def test_distil_with_a_summariser_parses_its_json() -> None:
    prompts: list[str] = []

    def summarise(prompt: str) -> str:
        prompts.append(prompt)
        reply = {"strategies": [{"title": "Single-pass softmax with the row in registers",
                                 "summary": "Load the row once, reduce max and sum in registers.",
                                 "rationale": "1.85x: the 16k-column rows fit in registers on H100.",
                                 "op_families": ["softmax", "bogus"], "backends": ["triton"],
                                 "dtypes": ["float32"], "shape_regime": "rows of 16k columns",
                                 "attempt_ids": ["r1-c0", "no-such-attempt"]}]}
        return "Here you go:\n```json\n" + json.dumps(reply) + "\n```"

    out = distil(softmax_trajectory(), softmax_analysis(), "sm_90", "triton", summarise, job_id="j", now=NOW)
    (prompt,) = prompts
    assert "r1-c1-fix1" in prompt and "0.74x" in prompt and "sm_90" in prompt and "$" not in prompt
    llm = [s for s in out if s.source == "learned:llm"]
    assert [s.title for s in llm] == ["Single-pass softmax with the row in registers"]
    assert llm[0].applies_to["op_families"] == ["softmax"] and llm[0].applies_to["shape_regime"] == "rows of 16k columns"
    assert [e.attempt_id for e in llm[0].evidence] == ["r1-c0"]


def test_a_malformed_summary_falls_back_to_the_plans() -> None:
    out = distil(softmax_trajectory(), softmax_analysis(), "sm_90", "triton", lambda p: "no JSON here", now=NOW)
    assert {s.title for s in out if s.source == "learned:llm"} == {
        "Online softmax in one read [seed-online-softmax]", "Two-kernel softmax with atomics for the row sums"}
    assert parse_reply('{"strategies": [{"title": "a"}, {"title": ""}, 3]}') == [{"title": "a"}]


def test_distil_prompt_fills_every_placeholder() -> None:
    traj = softmax_trajectory()
    attempts = [a for r in traj["rounds"] for a in r["attempts"]]
    prompt = distil_prompt(traj, softmax_analysis(), attempts, "sm_90", "triton", 3)
    assert "10_softmax.py" in prompt and "softmax" in prompt and "at most 3 strategies" in prompt


def test_merge_dedups_by_id_title_and_title_embedding(kb: KnowledgeBase) -> None:
    before = len(kb.store.all())
    paraphrase = Strategy("kb-new", "Online softmax with a running max and a rescaled running sum",
                          "One pass keeps the max and the rescaled sum.", "Fewer reads.",
                          applies_to(["softmax"]), "learned:llm", [ev(1, speedup=1.7)], NOW, NOW)
    same_title = Strategy("kb-other", "avoid atomics:  TWO-STAGE reductions", "s", "r", applies_to(["reduction"]),
                          "learned:llm", [ev(2, speedup=1.1)], NOW, NOW)
    distinct = Strategy("kb-atomics", "Two-kernel softmax with atomics for the row sums", "s", "r",
                        applies_to(["softmax"]), "learned:llm", [ev(3, speedup=0.7)], NOW, NOW)
    merged = merge(kb.store, [paraphrase, same_title, distinct], kb.embedder, now=NOW)
    assert [(m.strategy.id, m.created, m.matched_by) for m in merged] == [
        ("seed-online-softmax", False, "embedding"), ("seed-avoid-atomics", False, "title"),
        ("kb-atomics", True, "")]
    assert len(kb.store.all()) == before + 1
    seed = kb.store.get("seed-online-softmax")
    assert seed is not None and seed.title == "Online softmax: running max and rescaled sum"  # a seed keeps its words
    assert [e.attempt_id for e in seed.evidence] == ["r1-c1"] and seed.confidence > 0.6
    # merging the same evidence again adds nothing
    merge(kb.store, [paraphrase], kb.embedder, now=NOW)
    assert len(kb.store.get("seed-online-softmax").evidence) == 1  # type: ignore[union-attr]


def test_learned_strategies_merge_across_jobs_and_keep_the_better_text(tmp_path, embedder) -> None:
    kb = KnowledgeBase(FileStore(tmp_path / "kb.sqlite"), embedder)
    traj = softmax_trajectory()
    first = distil(traj, softmax_analysis(), "sm_90", "triton", job_id="job-1", now=NOW)
    merge(kb.store, first, embedder, now=NOW)
    for a in traj["rounds"][0]["attempts"]:
        a["speedup"] = 2.5 if a["id"] == "r0-c0" else 0.9
    second = distil(traj, softmax_analysis(), "sm_90", "triton", job_id="job-2", now=NOW + DAY)
    merged = merge(kb.store, second, embedder, now=NOW + DAY)
    offline = next(m for m in merged if m.strategy.source == "learned:offline")
    assert not offline.created and len(offline.strategy.evidence) == 4
    assert "passed with MAX_BLOCK=4096, num_warps=4" in offline.strategy.summary  # job 2's winner, 2.5x
