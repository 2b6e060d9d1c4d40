"""Dropout in training mode (KernelBench level2/66 and 83): the offline engine writes the
mask as a random operand its kernel's host draws as torch does, and the judge sets one
forward seed before the reference's call and the candidate's, so the candidate matches.
Eval mode stays the identity; two random ops in one forward (whose draws would have to
keep the reference's order) and Triton (whose templates do not draw) are refused with
the reason."""

from __future__ import annotations

import pytest
import torch

from agents.offline import OfflineEngine
from agents.offline.signature import from_source
from sandbox import Judge
from tests.agents.offline.cpu_harness import QUICK, analyse, cpu_proposals, load_source
from tests.agents.offline.test_bundled import ref

CASES = {
    # GEMM, the mask in its epilogue, then a row softmax (level2/66's chain)
    "linear_dropout_softmax": ref("""
        class Model(nn.Module):
            def __init__(self, fin, fout, p):
                super().__init__()
                self.fc = nn.Linear(fin, fout)
                self.drop = nn.Dropout(p)
            def forward(self, x):
                return torch.softmax(self.drop(self.fc(x)), dim=1)
        """, "[torch.randn(batch, fin)]", "[fin, fout, p]", "batch = 9\nfin = 40\nfout = 33\np = 0.2"),
    # a channel norm, clamps, then the mask as the functional form (level2/83's tail)
    "group_norm_clamp_dropout": ref("""
        class Model(nn.Module):
            def __init__(self, ch, groups, p):
                super().__init__()
                self.gn = nn.GroupNorm(groups, ch)
                self.p = p
            def forward(self, x):
                y = torch.clamp(self.gn(x), min=-0.5, max=0.5)
                return F.dropout(y, p=self.p, training=True)
        """, "[torch.randn(batch, ch, 6, 7)]", "[ch, groups, p]", "batch = 3\nch = 12\ngroups = 4\np = 0.3"),
    # elementwise only: the mask is shaped like the output the host allocates
    "dropout_then_tanh": ref("""
        class Model(nn.Module):
            def __init__(self, p):
                super().__init__()
                self.drop = nn.Dropout(p)
            def forward(self, x):
                return torch.tanh(self.drop(x) * 2.0)
        """, "[torch.randn(batch, width)]", "[p]", "batch = 17\nwidth = 301\np = 0.4"),
}


def seeded_pair(source: str, candidate: str, tag: str, forward_seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    reference = load_source(source, f"drop_ref_{tag}")
    cand = load_source(candidate, f"drop_cand_{tag}")
    torch.manual_seed(0)
    init = list(reference.get_init_inputs())
    model = reference.Model(*init)
    new = cand.ModelNew(*init)
    new.load_state_dict(model.state_dict())
    inputs = list(reference.get_inputs())
    with torch.no_grad():
        torch.manual_seed(forward_seed)
        want = model(*inputs)
        torch.manual_seed(forward_seed)
        got = new(*inputs)
        assert not torch.allclose(want, model.eval()(*inputs)), "the reference dropped nothing: the test shows nothing"
    return got, want


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_proposal_draws_the_references_mask(name: str) -> None:
    proposals = cpu_proposals(CASES[name], 4)
    assert proposals, name
    for i, p in enumerate(proposals):
        assert "bernoulli_(" in p.source, p.family
        got, want = seeded_pair(CASES[name], p.source, f"{name}_{i}", forward_seed=123 + i)
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
        # another seed, another mask: the kernel does not fix one
        other, _ = seeded_pair(CASES[name], p.source, f"{name}_{i}b", forward_seed=999)
        assert not torch.equal(other, got)


def test_eval_mode_dropout_is_the_identity() -> None:
    source = CASES["dropout_then_tanh"].replace("self.drop = nn.Dropout(p)", "self.drop = nn.Dropout(p).eval()")
    (proposal, *_) = cpu_proposals(source, 1)
    assert "bernoulli_" not in proposal.source


def test_two_random_ops_are_refused_with_the_reason() -> None:
    source = CASES["dropout_then_tanh"].replace("torch.tanh(self.drop(x) * 2.0)",
                                                "torch.tanh(self.drop(self.drop(x) * 2.0))")
    plan = OfflineEngine("cpu").plan(analyse(source), 4, from_source(source))
    assert not plan.proposals
    assert "several random ops" in plan.reason, plan.reason


def test_triton_says_its_templates_do_not_draw_the_mask() -> None:
    source = CASES["dropout_then_tanh"]
    plan = OfflineEngine("triton").plan(analyse(source), 4, from_source(source))
    assert not plan.proposals
    assert "random operand" in plan.reason and "does not draw" in plan.reason, plan.reason


def test_the_judge_passes_the_engines_dropout_kernel(tmp_path) -> None:
    source = CASES["linear_dropout_softmax"]
    (proposal, *_) = cpu_proposals(source, 1)
    with Judge(warm=True) as judge:
        result = judge.evaluate(source, proposal.source, "linear_dropout_softmax.py", "candidate.py", QUICK)
    assert result.verdict == "pass", (result.reasons, result.checks)
