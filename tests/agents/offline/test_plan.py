"""The engine's plan says why it has no proposal: the op no family covers, the
combination of known ops no family fuses, or the family whose template the
backend lacks -- and the reason reaches the search's trajectory and summary."""

from __future__ import annotations

from typing import Any

import pytest

from agents.offline import OfflineEngine
from agents.search import Search, SearchConfig
from sandbox import EvalOptions, Judge
from tests.agents.offline.test_bundled import analysis, node, ref


def test_an_op_no_family_covers_is_named() -> None:
    a = analysis([
        node("x", "placeholder", "x", shape=[4, 8, 5]),
        node("shuffle", "call_module", "ChannelShuffle", ["x"], shape=[4, 8, 5], module="shuffle"),
        node("output", "output", "output", ["shuffle"]),
    ], [[4, 8, 5]], [4, 8, 5])
    plan = OfflineEngine("cpu").plan(a)
    assert plan.proposals == [] and plan.family is None
    assert plan.reason == "no family for nn.ChannelShuffle (module shuffle)"
    assert plan.to_json()["reason"] == plan.reason and plan.to_json()["proposals"] == 0


def test_known_ops_no_family_fuses_are_named_in_order() -> None:
    a = analysis([
        node("x", "placeholder", "x", shape=[6, 32]),
        node("ln", "call_function", "layer_norm", ["x", [32]], shape=[6, 32]),
        node("flip", "call_function", "flip", ["ln", [1]], shape=[6, 32]),
        node("output", "output", "output", ["flip"]),
    ], [[6, 32]], [6, 32])
    plan = OfflineEngine("triton").plan(a)
    assert plan.proposals == []
    assert plan.reason.startswith("no family for layer_norm -> flip; ")
    assert "pipeline: stage 2 of the chain (flip): " in plan.reason


def test_a_chain_of_families_is_one_pipeline_candidate() -> None:
    a = analysis([
        node("x", "placeholder", "x", shape=[6, 32]),
        node("ln", "call_function", "layer_norm", ["x", [32]], shape=[6, 32]),
        node("relu", "call_function", "relu", ["ln"], shape=[6, 32]),
        node("output", "output", "output", ["relu"]),
    ], [[6, 32]], [6, 32])
    for backend in ("triton", "cpu"):
        plan = OfflineEngine(backend).plan(a)
        assert plan.matched == ["pipeline: layer_norm | relu"], backend
        source = plan.proposals[0].source
        assert "t0 = self.stage0(x)" in source and "return self.stage1(x, t0)" in source
        compile(source, "candidate.py", "exec")


def _half_sum() -> dict[str, Any]:
    a = analysis([
        node("x", "placeholder", "x", shape=[6, 32]),
        node("s", "call_function", "sum", ["x"], {"dim": -1}, shape=[6]),
        node("output", "output", "output", ["s"]),
    ], [[6, 32]], [6])
    for meta in (*a["inputs"], *a["outputs"], *(n for n in a["graph"] if n["shape"])):
        meta["dtype"] = "float16"
    return a


def test_a_family_the_backend_cannot_render_is_named() -> None:
    cpu = OfflineEngine("cpu").plan(_half_sum())
    assert cpu.matched == ["reduction: sum"] and cpu.proposals == []
    assert cpu.reason.startswith("reduction (sum): the cpu template does not cover it") and "float16" in cpu.reason
    assert cpu.skipped == [cpu.reason]
    triton = OfflineEngine("triton").plan(_half_sum())
    assert triton.family == "reduction" and triton.reason == "" and triton.skipped == []


def test_a_family_without_a_template_for_the_backend_is_named() -> None:
    engine = OfflineEngine("cpu")
    engine.templates = {k: v for k, v in engine.templates.items() if k != "reduction"}  # a backend lacking one
    a = _half_sum()
    for meta in (*a["inputs"], *a["outputs"], *(n for n in a["graph"] if n["shape"])):
        meta["dtype"] = "float32"
    plan = engine.plan(a)
    assert plan.proposals == [] and plan.reason == "reduction (sum): no reduction template for backend cpu"


FLIP = ref("""
    class Model(nn.Module):
        def forward(self, x):
            return torch.flip(x, dims=[1])
    """, "[torch.randn(rows, cols)]", sizes="rows = 5\ncols = 37")


@pytest.fixture(scope="module")
def judge():
    with Judge(warm=True) as j:
        yield j


def test_an_offline_search_without_a_proposal_stops_saying_why(judge: Judge, tmp_path) -> None:
    config = SearchConfig(max_rounds=1, offline_starters=2, backend="cpu")
    search = Search(judge, EvalOptions(device="cpu"), config=config, offline=OfflineEngine(),
                    trajectory_path=tmp_path / "traj.json")
    traj = search.run(FLIP, "flip.py")
    assert traj.attempts() == []
    assert traj.stop_reason.startswith("no offline proposal: no family for flip")
    summary = traj.summary()
    assert summary["offline"]["backend"] == "cpu" and summary["offline"]["family"] is None
    assert summary["offline"]["reason"].startswith("no family for flip")

