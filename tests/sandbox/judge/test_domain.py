"""The ``domain`` trial (issue 55, class 7): the default sizes on get_inputs' tensors
scaled and given outliers (``sandbox/runner/phases/domain.py``), answered by ``domain_inputs``.
Math that holds only near randn's values fails it (the red-team class ``narrow_domain``,
``test_redteam.py``); a reference with no such domain skips it, never failing the
candidate or the problem."""

from __future__ import annotations

import pytest
import torch

from sandbox import EvalOptions, Judge
from sandbox.runner.phases import domain
from tests.sandbox.judge import fixture_catalog as fc

OPTIONS = EvalOptions(device="cpu", timing_sets=1, time_reps=2, compile_baseline=False)


def test_floating_inputs_are_scaled_with_sign_kept_outliers_and_the_rest_left_as_drawn() -> None:
    torch.manual_seed(0)
    x, idx, mask = torch.randn(64, 300).t(), torch.arange(7), torch.rand(5) > 0.5
    positive = torch.rand(4000) + 0.1
    y, idx2, mask2, pos2 = domain.stretch([x, idx, mask, positive], 1234)
    assert idx2 is idx and mask2 is mask
    assert y.stride() == x.stride() and y.shape == x.shape and y.dtype == x.dtype
    plain = (y - x * domain.SCALE).abs() < 1e-5
    assert 1 <= int((~plain).sum()) <= 3 * x.numel() // domain.OUTLIER_EVERY + 1  # a few outliers, the rest scaled
    peak = float((x * domain.SCALE).abs().max()) * domain.OUTLIER
    assert torch.allclose(y[~plain].abs(), torch.full_like(y[~plain], peak))
    assert bool((torch.sign(y[~plain]) == torch.sign(x[~plain])).all())  # signs kept
    assert bool((pos2 > 0).all())  # a positive input stays positive
    again = domain.stretch([x], 1234)[0]
    assert torch.equal(again, y)  # the seed decides: the float64 calibration run sees the same values


def test_finite_looks_into_nested_outputs() -> None:
    assert domain.finite((torch.ones(3), [torch.zeros(2), {"a": torch.arange(3)}]))
    assert not domain.finite([torch.ones(2), (torch.tensor([1.0, float("inf")]),)])
    assert not domain.finite(torch.tensor([float("nan")]))


GUARDED = {
    # the reference refuses values past 100 (a domain it does not have)
    "raises": "        if x.abs().max() > 100:\n            raise ValueError('out of range')\n",
    # the reference is not finite there
    "not_finite": "        if x.abs().max() > 100:\n            return torch.relu(x) * float('inf')\n",
}


@pytest.fixture(scope="module")
def judge():
    with Judge(warm=True) as j:
        yield j


@pytest.mark.parametrize("guard", sorted(GUARDED))
def test_a_reference_without_that_domain_skips_the_trial_and_the_honest_kernel_passes(judge: Judge,
                                                                                     guard: str) -> None:
    problem = fc.problem("relu_affine").read_text()
    anchor = "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
    assert anchor in problem
    guarded = problem.replace(anchor, anchor + GUARDED[guard])
    honest = (fc.ROOT / "honest" / "relu_affine__native.py").read_text()
    result = judge.evaluate(guarded, honest, "relu_affine_guarded.py", "relu_affine__native.py", OPTIONS)
    checks = {c.name: c for c in result.checks}
    assert result.verdict == "pass", result.reasons
    assert checks["domain_inputs"].outcome == "skipped", checks["domain_inputs"]
    assert checks["correctness"].outcome == "pass"


def test_an_honest_kernel_passes_on_the_stretched_inputs(judge: Judge) -> None:
    problem = fc.problem("relu_affine").read_text()
    honest = (fc.ROOT / "honest" / "relu_affine__native.py").read_text()
    result = judge.evaluate(problem, honest, "relu_affine.py", "relu_affine__native.py", OPTIONS)
    checks = {c.name: c for c in result.checks}
    assert result.verdict == "pass", result.reasons
    assert checks["domain_inputs"].outcome == "pass", checks["domain_inputs"]
