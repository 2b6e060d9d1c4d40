"""The judge's tuning pass (sandbox/tuning.py, runner/phases/tune.py): many variants of one proposal
timed in one warm job, ranked fastest first. Real judge, real builds, the bundled relu-scale
problem. Nothing here asserts a speed: which variant is fastest is the machine's business;
what is asserted is that every variant gets the status it earns."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.offline import OfflineEngine
from agents.offline.signature import from_source
from sandbox import EvalOptions, Judge, ProblemError
from sandbox.tuning import TuneResult
from tests.agents.search.test_cpu import GOOD_C

PROBLEM = Path(__file__).resolve().parents[2] / "problems" / "level1" / "1_relu_scale.py"
WRONG_C = GOOD_C.replace("* s;\n", "* (s + 1.0f);\n")
POLICY_C = "import subprocess\n" + GOOD_C
TORCH_ONLY = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def __init__(self, scale):\n" \
             "        super().__init__()\n        self.scale = scale\n\n    def forward(self, x):\n" \
             "        return torch.relu(x) * self.scale\n"
BROKEN_C = GOOD_C.replace("* s;\n", "* s\n")
assert WRONG_C != GOOD_C and BROKEN_C != GOOD_C


@pytest.fixture(scope="module")
def tuned() -> tuple[list[str], TuneResult]:
    reference = PROBLEM.read_text()
    with Judge(warm=True) as judge:
        options = EvalOptions(device="cpu")
        analysis = judge.analyze(reference, PROBLEM.name, options)
        plan = OfflineEngine("cpu").tuning_plan(analysis, 24, from_source(reference))
        variants = [p.source for p in plan.proposals] + [WRONG_C, POLICY_C, TORCH_ONLY, BROKEN_C]
        return variants, judge.tune(reference, variants, PROBLEM.name, options)


def test_twenty_engine_variants_are_timed_and_ranked_fastest_first(tuned):
    variants, result = tuned
    engine = result.variants[:len(variants) - 4]
    assert len(engine) >= 20, "the wider space gives the tuning pass at least 20 variants here"
    assert all(v.status == "timed" and v.median_ms and len(v.times_ms) >= 2 for v in engine), \
        [(v.index, v.status, v.detail) for v in engine if v.status != "timed"]
    order = result.order()
    timed = [result.variants[i] for i in order if result.variants[i].status == "timed"]
    assert [v.median_ms for v in timed] == sorted(v.median_ms for v in timed)
    assert order[:len(timed)] == [v.index for v in timed] and sorted(order) == list(range(len(variants)))
    assert result.eager_ms and result.eager_ms > 0
    assert "advisory ranking" in result.label and "thread" in result.label


def test_wrong_refused_non_native_and_unbuildable_variants_are_not_timed(tuned):
    variants, result = tuned
    wrong, refused, torch_only, broken = result.variants[len(variants) - 4:]
    assert wrong.status == "wrong" and "max abs diff" in wrong.detail, wrong
    assert refused.status == "policy" and "subprocess" in refused.detail, refused
    assert torch_only.status == "error" and "no native sources" in torch_only.detail, torch_only
    assert broken.status == "build", broken
    assert result.order()[-4:] == [w.index for w in (wrong, refused, torch_only, broken)]
    doc = result.to_json()
    assert doc["counts"]["timed"] == len(variants) - 4 and doc["counts"]["wrong"] == 1
    assert doc["order"] == result.order() and len(doc["variants"]) == len(variants)


def test_tuning_is_for_native_cpu_kernels():
    # refused before any job runs: with a GPU, because tuning times CPU kernels; here, for want of one
    with Judge(warm=False) as judge, pytest.raises(ProblemError):
        judge.tune(PROBLEM.read_text(), [GOOD_C], PROBLEM.name, EvalOptions(device="cuda"))


BIG = 1 << 25  # floats: a 128 MB parameter, as a GEMM's weight at level-2 sizes
BIG_REFERENCE = PROBLEM.read_text().replace(
    "        self.scale = scale\n", f"        self.scale = scale\n        self.big = nn.Parameter(torch.zeros({BIG}))\n")
BIG_VARIANT = GOOD_C.replace(
    "        self.scale = scale\n", f"        self.scale = scale\n        self.big = nn.Parameter(torch.ones({BIG}))\n")


def test_variants_share_the_reference_weights_within_the_job_memory():
    # nine copies of 128 MB would not fit the job's 768 MB on top of torch; one does
    assert BIG_REFERENCE != PROBLEM.read_text() and BIG_VARIANT != GOOD_C
    variants = [BIG_VARIANT + f"\n# variant {i}\n" for i in range(8)]
    with Judge(warm=True) as judge:
        result = judge.tune(BIG_REFERENCE, variants, PROBLEM.name, EvalOptions(device="cpu", memory_mb=768))
    assert [v.status for v in result.variants] == ["timed"] * 8, [(v.status, v.detail) for v in result.variants]


def test_variants_share_one_set_of_input_buffers_within_the_job_memory():
    # a 32 MB input: thirteen parties each with buffers of their own would hold 416 MB on top of
    # the input sets, past the job's 768 MB (KernelBench's ReLU under --fit-memory 1: 25 x 470 MB)
    reference = PROBLEM.read_text().replace("batch_size = 19\ndim = 1531\n", "batch_size = 2048\ndim = 4096\n")
    assert reference != PROBLEM.read_text()
    variants = [GOOD_C + f"\n# variant {i}\n" for i in range(12)]
    with Judge(warm=True) as judge:
        result = judge.tune(reference, variants, PROBLEM.name, EvalOptions(device="cpu", memory_mb=768))
    assert [v.status for v in result.variants] == ["timed"] * 12, [(v.status, v.detail) for v in result.variants]


def test_timing_sets_keep_within_a_quarter_of_the_job_memory():
    from sandbox.runner.measure import timed

    assert timed.timing_bytes(None) == timed.TIMING_BYTES == timed.timing_bytes(4096)
    assert timed.timing_bytes(768) == 192 << 20
    # 64 MB a set (a 32 MB input and its output): eight under the default limit, three under 768 MB
    assert timed.set_cap(9, 64 << 20, 0.01, 10.0, False, 4096) == 8
    assert timed.set_cap(9, 64 << 20, 0.01, 10.0, False, 768) == 3
    assert timed.set_cap(9, 64 << 20, 0.01, 10.0, True, 256) == timed.MIN_SETS_LARGE  # never below the floor


def test_a_tuning_job_past_its_memory_says_so():
    reference = PROBLEM.read_text().replace("batch_size = 19\ndim = 1531\n", "batch_size = 2048\ndim = 4096\n")
    with Judge(warm=True) as judge:
        result = judge.tune(reference, [GOOD_C], PROBLEM.name, EvalOptions(device="cpu", memory_mb=200))
    [v] = result.variants
    # the runner's watch kills it ("exceeded its memory limit, N MB at its peak") or an allocation
    # fails inside it first (the address-space limit): either way the variant's detail says memory
    assert v.status == "error" and "memory" in v.detail.lower(), v.detail


def test_the_pass_leaves_out_what_its_time_budget_cannot_hold(monkeypatch):
    """A pass whose checks alone would take it past its budget (a GB a call: a second per
    variant) times the first variants (the engine's preferred) and says why the rest were not."""
    from sandbox import tuning
    from sandbox.runner.phases import tune

    monkeypatch.setattr(tuning, "TUNE_PASS_BUDGET_S", 0.001)
    variants = [GOOD_C + f"\n# variant {i}\n" for i in range(8)]
    with Judge(warm=True) as judge:
        result = judge.tune(PROBLEM.read_text(), variants, PROBLEM.name, EvalOptions(device="cpu"), budget_s=0.0001)
    statuses = [v.status for v in result.variants]
    assert statuses == ["timed"] * tune.MIN_TUNED + ["skipped"] * (8 - tune.MIN_TUNED), \
        [(v.status, v.detail) for v in result.variants]
    assert all("time budget" in v.detail for v in result.variants[tune.MIN_TUNED:])
    assert result.to_json()["counts"]["skipped"] == 8 - tune.MIN_TUNED
    assert result.order()[tune.MIN_TUNED:] == list(range(tune.MIN_TUNED, 8))


def test_a_pass_that_can_rank_no_more_than_the_search_judges_stops_after_its_first_check(monkeypatch):
    """When the budget holds no more variants than the search judges in full anyway (a GB a
    call, four starters), ranking them buys nothing: the first is checked and timed, the rest
    keep the engine's order, and each says why."""
    from sandbox import tuning

    monkeypatch.setattr(tuning, "TUNE_PASS_BUDGET_S", 0.001)
    variants = [GOOD_C + f"\n# variant {i}\n" for i in range(6)]
    with Judge(warm=True) as judge:
        result = judge.tune(PROBLEM.read_text(), variants, PROBLEM.name, EvalOptions(device="cpu"), budget_s=0.0001,
                            judged=4)
    statuses = [v.status for v in result.variants]
    assert statuses == ["timed"] + ["skipped"] * 5, [(v.status, v.detail) for v in result.variants]
    assert all("the 4 the search judges in full" in v.detail for v in result.variants[1:])
    assert result.order() == list(range(6))


@pytest.mark.parametrize("checked_s, checked, budget, judged, fits", [
    (0.05, 1, 20.0, 4, 0),    # milliseconds a check: the pass ranks far more than the search judges
    (5.0, 1, 20.0, 4, 1),     # a GB a call (5 s a check, its timing twice that): one fits, four are judged
    (2.0, 1, 20.0, 2, 0),     # three fit, two judged: the pass still picks two of three
    (5.0, 1, 20.0, 0, 0),     # no judged count given: the budget rule alone
    (0.0, 0, 20.0, 4, 0),     # nothing checked yet
])
def test_ranks_nothing_compares_what_fits_with_what_is_judged(checked_s, checked, budget, judged, fits):
    from sandbox.runner.phases.tune import _ranks_nothing

    assert _ranks_nothing(checked_s, checked, budget, judged) == fits


@pytest.mark.parametrize("checked_s, checked, right, budget, over", [
    (0.05, 24, 24, 20.0, False),   # milliseconds a call: every variant fits
    (6.0, 6, 6, 20.0, True),       # a second a check: with its timing, a seventh would not fit
    (4.0, 4, 3, 20.0, False),      # fewer than MIN_TUNED right: always one more
    (0.0, 0, 0, 0.001, False),
])
def test_over_budget_projects_the_timing_from_the_checks(checked_s, checked, right, budget, over):
    from sandbox.runner.phases.tune import _over_budget

    assert _over_budget(checked_s, checked, right, budget) is over
