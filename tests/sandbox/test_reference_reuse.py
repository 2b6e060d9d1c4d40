"""One search's candidates share the reference's correctness trials
(EvalOptions.reuse_reference): the reference runs its default and perturbed trials
once per warm judge, the next candidates of the same reference are checked against
those results (same seeds), and timing sets stay fresh. A wrong candidate still fails
on the replayed trials; without the option every evaluation draws new seeds."""

from __future__ import annotations

import dataclasses

from agents.search.loop import reusing_reference
from sandbox.judge import EvalOptions, Judge
from tests.sandbox.judge import fixture_catalog as fc

REFERENCE = fc.problem("relu_affine").read_text()
HONEST = (fc.HONEST / "relu_affine__native.py").read_text()
# the honest kernel with its scale off by a little: wrong at every size
WRONG = HONEST.replace("2.0", "2.01") if "2.0" in HONEST else None


def _options(reuse: bool) -> EvalOptions:
    return EvalOptions(device="cpu", trials=2, time_reps=5, timing_sets=2, baseline_cache=False,
                       reuse_reference=reuse)


def _seeds(result) -> list[int]:
    return list(result.seeds)


def test_candidates_of_one_reference_replay_its_trials_and_still_get_checked() -> None:
    with Judge() as judge:
        first = judge.evaluate(REFERENCE, HONEST, options=_options(True))
        second = judge.evaluate(REFERENCE, HONEST, options=_options(True))
        assert first.verdict == "pass" and second.verdict == "pass", (first.reasons, second.reasons)
        trials = len(first.seeds) - 2  # the last two are the timing sets
        assert trials >= 2
        assert _seeds(second)[:trials] == _seeds(first)[:trials]  # the same correctness trials
        assert _seeds(second)[trials:] != _seeds(first)[trials:]  # fresh timing inputs
        # the second reference job ran no correctness trial: its trial span covers the timing sets only
        assert second.cost.get("reference_trials_s", 0.0) <= first.cost.get("reference_trials_s", 0.0) + 0.5
        assert WRONG is not None and WRONG != HONEST
        wrong = judge.evaluate(REFERENCE, WRONG, options=_options(True))
        assert wrong.verdict == "fail" and _seeds(wrong)[:trials] == _seeds(first)[:trials]
        assert "correctness" in " ".join(wrong.reasons) or any(
            c.get("name") == "correctness" and c.get("status") == "fail" for c in wrong.to_json()["checks"])


def test_without_the_option_every_evaluation_draws_new_seeds() -> None:
    with Judge() as judge:
        a = judge.evaluate(REFERENCE, HONEST, options=_options(False))
        b = judge.evaluate(REFERENCE, HONEST, options=_options(False))
        assert a.verdict == b.verdict == "pass", (a.reasons, b.reasons)
        assert set(_seeds(a)).isdisjoint(_seeds(b))


def test_the_search_judges_with_reuse_and_leaves_the_callers_options_alone() -> None:
    options = _options(False)
    assert reusing_reference(options).reuse_reference is True and options.reuse_reference is False
    assert dataclasses.replace(options) == options
    assert reusing_reference({"not": "options"}) == {"not": "options"}


def test_a_reference_with_values_derived_from_its_sizes_is_reused_too() -> None:
    """channel_bias computes ``bias_shape`` from its sizes: its perturbed trials carry the
    derived value, and the sizes-alone trials behind them run only where those fail. A
    fallback that did not run kept the reference from being reused at all."""
    reference = fc.problem("channel_bias").read_text()
    honest = (fc.HONEST / "channel_bias__native.py").read_text()
    with Judge() as judge:
        first = judge.evaluate(reference, honest, options=_options(True))
        second = judge.evaluate(reference, honest, options=_options(True))
    assert first.verdict == "pass" and second.verdict == "pass", (first.reasons, second.reasons)
    trials = len(first.seeds) - 2
    assert first.perturbed and _seeds(second)[:trials] == _seeds(first)[:trials]
