"""The LLM path with backend cpu, end to end: real judge, real SDK client, scripted model on
loopback. The model is told the C candidate format and the CPU profile, its C that does not
compile comes back with gcc's message, the repaired kernel is timed for real, and the offline
engine's C starters are judged in round 0; the fastest verified kernel is the best. A verified
kernel slower than eager does not end the search: the offline round judges further proposals
and an LLM candidate gets a speed-up turn instead of stopping at its pass. A kernel ahead of eager
at ``roofline_stop`` of its roofline bound ends it."""

from __future__ import annotations

import pytest

from agents.offline import OfflineEngine
from agents.offline.engine import Plan, Proposal
from agents.providers import make_provider
from agents.search import Search, SearchConfig
from agents.search.budget import Budget
from agents.trajectory import Trajectory
from sandbox import EvalOptions, Judge
from tests.agents.search import scripted
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.sandbox.judge.test_roofline_judge import keep as keep_ceilings

GOOD_C = '''import torch
import torch.nn as nn
from kforge_native import load_c

SRC = r\'\'\'
#include <stdint.h>
void relu_scale(const float* x, float* y, int64_t n, float s) {
    #pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] > 0.0f ? x[i] : 0.0f) * s;
}
\'\'\'
lib = load_c(SRC, ["void relu_scale(const float* x, float* y, int64_t n, float s)"], name="relu_scale")


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu_scale(x, y, x.numel(), self.scale)
        return y
'''
# Right, and slow on purpose: y may alias x, so the compiler must run every one of the serial passes.
# 64 passes were not enough on CI's host (1.13x eager there); 2048 passes of ~1.5 us or more are 3 ms
# or more, where eager's call takes tens of microseconds.
SLOW_C = GOOD_C.replace("    #pragma omp parallel for simd schedule(static)\n    for (int64_t i = 0; i < n; i++)",
                        "    for (int rep = 0; rep < 2048; rep++)\n    for (int64_t i = 0; i < n; i++)")
assert SLOW_C != GOOD_C
BROKEN_C = GOOD_C.replace("* s;\n", "* s\n")  # a missing semicolon: gcc says so
PLAN = '```json\n{"strategies": [{"title": "fused relu-scale C loop", "rationale": "one pass", ' \
       '"steps": "omp parallel for simd"}]}\n```'
SCRIPT = [PLAN, "One loop.\n```python\n" + BROKEN_C + "```", "Added the semicolon.\n```python\n" + GOOD_C + "```",
          scripted.REVIEW]


@pytest.fixture(scope="module")
def judge():
    with Judge(warm=True) as j:
        yield j


def test_cpu_backend_llm_and_offline_rounds(judge, tmp_path):
    with FakeLLMServer() as srv:
        srv.queue(*[Reply(text) for text in SCRIPT])
        provider = make_provider("openai", base_url=srv.openai_base_url, api_key="sk-test-key")
        config = SearchConfig(max_rounds=1, candidates_per_round=1, max_repairs=1, offline_starters=2, offline_extra=0,
                              backend="cpu")
        # the app hands over its default (Triton) engine; the search asks it for the cpu backend's C templates
        search = Search(judge, EvalOptions(device="cpu"), provider=provider, config=config, offline=OfflineEngine(),
                        trajectory_path=tmp_path / "traj.json")
        traj = search.run(scripted.PROBLEM.read_text(), scripted.PROBLEM.name)
        requests = [str(r.body) for r in srv.requests]

    attempts = {a.id: a for a in traj.attempts()}
    assert list(attempts) == ["r0-c0", "r0-c1", "r1-c0", "r1-c0-fix1"]
    for offline in ("r0-c0", "r0-c1"):
        assert "from kforge_native import load_c" in attempts[offline].code
        assert attempts[offline].verdict == "pass" and attempts[offline].speedup is not None
    # the planner saw the CPU system prompt, per-op times and the CPU; the coder the C format
    assert "backend is cpu" in requests[0] and "us per forward" in requests[0] and "gcc -O3" in requests[0]
    assert "kforge_native" in requests[1] and "module-level string literal" in requests[1]
    # C that does not compile fails the compile check with gcc's message, which reaches the repair
    broken = attempts["r1-c0"]
    assert broken.verdict == "fail" and any(r.startswith("compile") for r in broken.reasons), broken.reasons
    assert "expected" in requests[2] and "error" in requests[2]
    fixed = attempts["r1-c0-fix1"]
    assert fixed.verdict == "pass" and fixed.speedup is not None
    # the reviewer got the CPU reviewer prompt and real numbers
    assert "OpenMP" in requests[3] and "vs eager" in requests[3]
    timed = [a for a in attempts.values() if a.verdict == "pass"]
    assert traj.best() is max(timed, key=lambda a: a.speedup or 0.0)


class SlowFirst:
    """An engine (what Search needs of OfflineEngine: plan) whose first proposal is a kernel
    slower than eager; its further proposals are deterministic, as the real engine's are."""

    def plan(self, analysis, max_candidates, signature=None) -> Plan:
        proposals = [Proposal("slow", {"rep": 2048}, SLOW_C, "2048 passes"), Proposal("loop", {}, GOOD_C, "one pass")]
        return Plan("cpu", proposals=proposals[:max_candidates], matched=["slow: test"])


def timer_noise(traj) -> bool:
    """An attempt failed only timer_corroborated: on a loaded shared machine the outside clock
    can see several times the reported time. Such a run says nothing about the loop; run again."""
    return any(a.reasons and all(r.startswith("timer_corroborated") for r in a.reasons) for a in traj.attempts())


def run_search(make, tries: int = 3):
    for _ in range(tries):
        traj, requests = make()
        if not timer_noise(traj):
            break
    return traj, requests


def test_a_winner_slower_than_eager_does_not_end_the_offline_round(judge):
    config = SearchConfig(max_rounds=0, offline_starters=1, offline_extra=1, backend="cpu")
    traj, _ = run_search(lambda: (Search(judge, EvalOptions(device="cpu", compile_baseline=False), config=config,
                                         offline=SlowFirst()).run(scripted.PROBLEM.read_text(), scripted.PROBLEM.name),
                                  None))
    attempts = traj.attempts()
    first = attempts[0]
    assert first.id == "r0-c0" and first.verdict == "pass" and first.speedup is not None and first.speedup < 1.0
    # the slower-than-eager pass is not the end: the next proposal is judged (budget permitting)
    assert [a.id for a in attempts] == ["r0-c0", "r0-c1"]
    assert traj.rounds[0].plan[1]["why"] == "no verified kernel beat eager yet"
    summary = traj.summary()
    assert summary["comparison"]["attempt_id"] == summary["best"]["id"]
    if summary["best"]["speedup"] <= 1.0:
        assert summary["comparison"]["recommendation"].startswith("Keep the reference")


def test_near_ceiling_needs_the_fraction_and_a_kernel_not_slower_than_eager() -> None:
    budget = Budget(SearchConfig(backend="cpu"))  # roofline_stop 0.8
    at = lambda f: {"parties": {"kernel": {"fraction": f}, "eager": {"fraction": 0.9}}}  # noqa: E731
    assert budget.near_ceiling(1.2, at(0.85)) == 0.85
    assert budget.near_ceiling(1.2, at(0.79)) is None
    assert budget.near_ceiling(0.95, at(0.85)) is None  # slower than eager: never "near the ceiling" and done
    assert budget.near_ceiling(1.2, {}) is None  # no ceilings kept on this machine
    assert Budget(SearchConfig(backend="cpu", roofline_stop=None)).near_ceiling(1.2, at(0.99)) is None


def test_a_kernel_ahead_of_eager_at_its_roofline_stop_ends_the_search(judge, monkeypatch, tmp_path):
    # Kept ceilings of a far faster machine give every kernel a small fraction; a stop below it
    # makes the first kernel ahead of eager the last one judged.
    monkeypatch.setenv("KFORGE_JUDGE_BASELINE_CACHE", str(tmp_path))
    keep_ceilings(tmp_path, 1000.0, 1e6)
    config = SearchConfig(max_rounds=0, offline_starters=1, offline_extra=1, backend="cpu", roofline_stop=1e-9)
    traj, _ = run_search(lambda: (Search(judge, EvalOptions(device="cpu", compile_baseline=False), config=config,
                                         offline=SlowFirst()).run(scripted.PROBLEM.read_text(), scripted.PROBLEM.name),
                                  None))
    slow, good = traj.attempts()
    # the slow kernel has its fraction, past the stop, and is slower than eager: the search goes on
    assert slow.verdict == "pass" and slow.speedup < 1.0 and slow.roofline["parties"]["kernel"]["fraction"] > 1e-9
    assert set(slow.roofline["parties"]) == {"kernel", "eager"} and slow.roofline["bound_by"] == "memory"
    assert good.verdict == "pass" and good.roofline["parties"]["kernel"]["fraction"] > 1e-9
    if good.speedup >= 1.0:
        assert traj.stop_reason.startswith("r0-c1 reached") and "of its roofline bound" in traj.stop_reason
    else:
        assert traj.stop_reason == "rounds finished"


def test_a_slower_than_eager_pass_gets_a_speed_up_turn(judge):
    script = [PLAN, "Two thousand passes.\n```python\n" + SLOW_C + "```", scripted.REVIEW,
              "One pass.\n```python\n" + GOOD_C + "```", scripted.REVIEW]

    def make():
        with FakeLLMServer() as srv:
            srv.queue(*[Reply(text) for text in script])
            provider = make_provider("openai", base_url=srv.openai_base_url, api_key="sk-test-key")
            config = SearchConfig(max_rounds=1, candidates_per_round=1, max_repairs=1, offline_starters=0,
                                  backend="cpu")
            traj = Search(judge, EvalOptions(device="cpu", compile_baseline=False), provider=provider,
                          config=config).run(scripted.PROBLEM.read_text(), scripted.PROBLEM.name)
            return traj, [str(r.body) for r in srv.requests]

    traj, requests = run_search(make)
    slow, faster = traj.attempts()
    assert slow.id == "r1-c0" and slow.verdict == "pass" and slow.speedup is not None and slow.speedup < 1.0
    # (its own verdict is the judge's business: on a loaded machine a correct kernel can fail timer_corroborated)
    assert faster.id == "r1-c0-fix1" and faster.repair_of == "r1-c0" and faster.code == GOOD_C, faster.reasons
    # the coder was asked for speed, with the judge's timing, not told it failed
    assert "not faster than eager PyTorch" in requests[3] and "vs eager" in requests[3]
    assert "did not pass the judge" not in requests[3]


def test_the_offline_round_judges_the_tuning_pass_fastest_first(judge, tmp_path):
    config = SearchConfig(max_rounds=0, offline_starters=2, offline_extra=0, backend="cpu", tune_variants=12)
    path = tmp_path / "traj.json"
    traj = Search(judge, EvalOptions(device="cpu", compile_baseline=False), config=config, offline=OfflineEngine(),
                  trajectory_path=path).run(scripted.PROBLEM.read_text(), scripted.PROBLEM.name)
    tuning = traj.tuning
    assert len(tuning["variants"]) == len(tuning["proposals"]) >= 2 and tuning["counts"]["timed"] >= 2
    judged = [a for a in traj.attempts() if a.source == "offline"]
    wanted = [tuning["proposals"][i] for i in tuning["order"][:2]]
    assert [a.strategy for a in judged] == [f"offline: {p['family']} {p['params']}" for p in wanted]
    # every attempt keeps where its judge run spent its time (issue 28's profile, in the trajectory)
    assert all(a.judge_cost.get("total_s", 0) > 0 and "candidate_timing_s" in a.judge_cost for a in judged)
    medians = [tuning["variants"][i]["median_ms"] for i in tuning["order"][:2]]
    assert medians == sorted(medians)
    assert traj.summary()["tuning"] == tuning

    # A resumed search keeps the saved order (no second pass): the order is what the round was judged in.
    saved = Trajectory.load(path)
    saved.tuning["order"] = list(reversed(saved.tuning["order"]))
    saved.rounds = []

    class NoTuning:
        def tune(self, *args, **kwargs):
            raise AssertionError("tuned again on resume")

        def __getattr__(self, name):
            return getattr(judge, name)

    again = Search(NoTuning(), EvalOptions(device="cpu", compile_baseline=False), config=config,
                   offline=OfflineEngine()).run(scripted.PROBLEM.read_text(), scripted.PROBLEM.name, resume=saved)
    first = saved.tuning["proposals"][saved.tuning["order"][0]]
    assert again.attempts()[0].strategy == f"offline: {first['family']} {first['params']}"
