"""The offline engine with backend cpu through the real judge: for one bundled problem per
family (problems/level1, level2) it writes C, the judge builds it with trusted code, checks it
and times it on the CPU, and the fastest verified candidate is the result.

Timings here are only asserted to exist (speed goes in docs/benchmarks.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agents.offline import OfflineEngine, run_offline
from agents.offline.engine import Attempt, Proposal, pick_best
from agents.trajectory import Attempt as SearchAttempt
from agents.trajectory import Round, Trajectory
from sandbox import EvalOptions, Judge

ROOT = Path(__file__).resolve().parents[3]
CPU = EvalOptions(device="cpu")

PER_FAMILY = {
    "problems/level2/11_bias_gelu_3d.py": "elementwise",
    "problems/level1/10_softmax.py": "softmax",
    "problems/level1/12_layer_norm.py": "norm",
    "problems/level1/16_max_dim.py": "reduction",
    "problems/level2/1_linear_bias_relu.py": "matmul",
}


@pytest.fixture(scope="module")
def judge():
    with Judge() as j:
        yield j


@pytest.mark.parametrize("path", sorted(PER_FAMILY))
def test_cpu_backend_verifies_a_native_kernel_per_family(judge: Judge, path: str) -> None:
    source = (ROOT / path).read_text()
    result = run_offline(judge, source, path, CPU, max_candidates=2, engine=OfflineEngine("cpu"))
    assert result.best is not None, result.reason
    assert result.best.proposal.family == PER_FAMILY[path]
    assert "from kforge_native import load_c" in result.best.proposal.source
    # native C on the CPU is timed for real: every proposal is judged and ranked by its speedup
    assert len(result.attempts) == 2 and all(a.verdict == "pass" for a in result.attempts), \
        [(a.verdict, a.reasons[:2]) for a in result.attempts]
    assert all(a.speedup is not None and a.speedup > 0 for a in result.attempts)
    assert result.best.speedup == max(a.speedup or 0.0 for a in result.attempts)
    assert result.selection.startswith("highest speedup")
    assert "cpu" in result.best.timing.get("label", "")


# -- selection, without the judge ----------------------------------------------------------------------
def _attempt(verdict: str, speedup: float | None) -> Attempt:
    return Attempt(Proposal("elementwise", {}, f"# {verdict} {speedup}", ""), verdict, [], {}, speedup)


def test_fastest_verified_wins_when_timed_and_first_verified_otherwise() -> None:
    timed = [_attempt("pass", 1.1), _attempt("fail", None), _attempt("pass", 2.3), _attempt("pass", 0.7)]
    best, why = pick_best(timed)
    assert best is timed[2] and why.startswith("highest speedup")
    untimed = [_attempt("fail", None), _attempt("pass", None), _attempt("pass", None)]
    best, why = pick_best(untimed)
    assert best is untimed[1] and why.startswith("first passing")
    assert pick_best([_attempt("fail", None)])[0] is None


@dataclass
class _Judge:
    analysis: dict[str, Any]
    speedups: list[float | None]
    seen: list[str] = field(default_factory=list)

    def analyze(self, reference: str, reference_name: str = "", options: Any = None) -> dict[str, Any]:
        return self.analysis

    def evaluate(self, reference: str, candidate: str, reference_name: str = "", candidate_name: str = "",
                 options: Any = None) -> Any:
        self.seen.append(candidate)
        speedup = self.speedups[len(self.seen) - 1]

        @dataclass
        class R:
            verdict: str = "pass"
            reasons: list[str] = field(default_factory=list)
            timing: dict[str, Any] = field(default_factory=dict)
            speedup: float | None = None

        return R(speedup=speedup)


def test_cpu_backend_judges_every_proposal_even_on_a_cpu_device() -> None:
    from .cpu_harness import analyse

    source = (ROOT / "problems/level1/3_sigmoid.py").read_text()
    judge = _Judge(analyse(source), [1.4, 3.0, 2.0, 0.9])
    result = run_offline(judge, source, "3_sigmoid.py", CPU, max_candidates=4, engine=OfflineEngine("cpu"))
    assert len(judge.seen) == 4 and result.best is result.attempts[1]
    # the Triton engine on the CPU keeps its first-verified behaviour (interpreter timings mean nothing)
    triton_judge = _Judge(judge.analysis, [None, None, None, None])
    result = run_offline(triton_judge, source, "3_sigmoid.py", CPU, max_candidates=4)
    assert len(triton_judge.seen) == 1 and result.selection.startswith("first passing")


def test_search_best_is_the_fastest_verified_attempt() -> None:
    traj = Trajectory(problem="p", reference="", config={}, label="offline")
    traj.rounds.append(Round(index=0, attempts=[
        SearchAttempt(id="r0-c0", round=0, strategy="a", code="a", source="offline", verdict="pass", speedup=1.2),
        SearchAttempt(id="r0-c1", round=0, strategy="b", code="b", source="offline", verdict="pass", speedup=2.5),
        SearchAttempt(id="r0-c2", round=0, strategy="c", code="c", source="offline", verdict="fail")]))
    assert traj.best().id == "r0-c1"
    untimed = Trajectory(problem="p", reference="", config={}, label="offline")
    untimed.rounds.append(Round(index=0, attempts=[
        SearchAttempt(id="r0-c0", round=0, strategy="a", code="a", source="offline", verdict="pass"),
        SearchAttempt(id="r0-c1", round=0, strategy="b", code="b", source="offline", verdict="pass")]))
    assert untimed.best().id == "r0-c0"
