"""Attention written out by hand (a fused projection split into q, k and v, heads viewed out
and transposed, scores scaled by 1 / sqrt of the heads' width, a causal mask read from a
buffer, softmax, the product with v, heads merged back): the engine reads it as its
attention kernel between the projections, and the judge passes the candidate at the sizes
it perturbs. A mask buffer that is not the causal triangle is refused, never ignored."""

from __future__ import annotations

import pytest
import torch

from agents.offline import OfflineEngine, run_offline
from agents.offline.ir.graph import build
from agents.offline.signature import from_source
from sandbox import Judge
from tests.agents.offline.cpu_harness import QUICK, analyse, load_source
from tests.agents.offline.test_bundled import ref

HAND_WRITTEN = ref("""
    import math


    class Model(nn.Module):
        def __init__(self, width, heads, longest):
            super().__init__()
            self.qkv = nn.Linear(width, 3 * width)
            self.out = nn.Linear(width, width)
            self.drop = nn.Dropout(0.0)
            self.register_buffer("mask", torch.tril(torch.ones(longest, longest)).view(1, 1, longest, longest))
            self.heads = heads
            self.width = width

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.qkv(x).split(self.width, dim=2)
            q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
            k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
            v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
            y = self.drop(F.softmax(att, dim=-1)) @ v
            return self.out(y.transpose(1, 2).contiguous().view(B, T, C))
    """, "[torch.randn(batch, seq, width)]", "[width, heads, longest]",
    "batch = 2\nseq = 19\nwidth = 48\nheads = 4\nlongest = 40")

# minGPT's attention with ReLU for softmax (KernelBench level3/50's forward): unnormalised weights
RELU = HAND_WRITTEN.replace("self.drop(F.softmax(att, dim=-1))", "F.relu(att)")

UNMASKED = ref("""
    import math


    class Model(nn.Module):
        def forward(self, q, k, v):
            return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1) @ v
    """, "[torch.randn(2, 3, 9, 16), torch.randn(2, 3, 11, 16), torch.randn(2, 3, 11, 8)]")


@pytest.fixture(scope="module")
def judge():
    with Judge() as j:
        yield j


def _attention_nodes(source: str) -> list:
    traced = build(analyse(source))
    assert traced.output is not None, traced.problems
    return [n for n in traced.output.walk() if n.kind == "op" and n.op == "attention"]


def test_the_buffer_forward_slices_stays_in_the_graph() -> None:
    """A buffer read in forward is a node of the trace: left unproxied, the trace had folded
    ``mask[:, :, :T, :T] == 0`` into a constant of this call's sizes."""
    graph = analyse(HAND_WRITTEN)["graph"]
    assert [n["target"] for n in graph if n["op"] == "get_attr"] == ["mask"]
    assert not [n for n in graph if "_tensor_constant" in str(n["target"])]


def test_hand_written_attention_is_read_as_the_attention_op() -> None:
    causal, = _attention_nodes(HAND_WRITTEN)
    assert causal.attrs == {"causal": True, "scale": None, "mask": "mask"}
    plain, = _attention_nodes(UNMASKED)
    assert plain.attrs == {"causal": False, "scale": None}


def test_relu_weights_are_read_as_relu_attention() -> None:
    relu, = _attention_nodes(RELU)
    assert relu.attrs == {"causal": True, "scale": None, "mask": "mask", "weights": "relu"}
    # a masked score filled with a positive value weighs that value under ReLU: not the causal loop
    assert not _attention_nodes(RELU.replace('float("-inf")', "1.0"))
    # softmax's masked keys weigh 0 only with -inf
    assert not _attention_nodes(HAND_WRITTEN.replace('float("-inf")', "-1e4"))
    assert _attention_nodes(RELU.replace('float("-inf")', "-1e4"))


def test_a_scale_read_off_another_dim_is_not_the_default_scale() -> None:
    """1 / sqrt(q.size(-2)) is not softmax attention's default scale: no attention op."""
    assert not _attention_nodes(UNMASKED.replace("q.size(-1)", "q.size(-2)"))


def test_hand_written_causal_attention_passes_the_judge(judge: Judge) -> None:
    result = run_offline(judge, HAND_WRITTEN, "hand_attention.py", QUICK, max_candidates=1,
                         engine=OfflineEngine("cpu"))
    assert result.best is not None, result.reason + str([a.reasons[:1] for a in result.attempts])
    assert result.best.verdict == "pass" and result.best.proposal.family == "pipeline"
    source = result.best.proposal.source
    assert "causal attention in C" in source and ".chunk(3, 2)[1]" in source and "causal_mask_holds(" in source


def test_relu_attention_passes_the_judge(judge: Judge) -> None:
    result = run_offline(judge, RELU, "relu_attention.py", QUICK, max_candidates=1, engine=OfflineEngine("cpu"))
    assert result.best is not None, result.reason + str([a.reasons[:1] for a in result.attempts])
    assert result.best.verdict == "pass" and result.best.proposal.family == "pipeline"
    source = result.best.proposal.source
    assert "causal ReLU attention in C" in source and "relu_attention(" in source and "kf_exp" not in source


def test_the_triton_candidate_checks_the_mask_too() -> None:
    proposal = OfflineEngine("triton").propose(analyse(HAND_WRITTEN), 1, from_source(HAND_WRITTEN))[0]
    assert "causal_mask_holds(self.mask" in proposal.source and "raise ValueError" in proposal.source


def test_a_mask_buffer_that_is_not_causal_is_refused() -> None:
    """A state_dict whose mask is all ones (attention over every key): the reference computes
    that, and the candidate, whose kernel is causal, raises instead of answering wrongly."""
    analysis = analyse(HAND_WRITTEN)
    proposal = OfflineEngine("cpu").propose(analysis, 1, from_source(HAND_WRITTEN))[0]
    reference = load_source(HAND_WRITTEN, "hand_attention_ref")
    candidate = load_source(proposal.source, "hand_attention_cand")
    torch.manual_seed(0)
    model = reference.Model(*reference.get_init_inputs())
    new = candidate.ModelNew(*reference.get_init_inputs())
    new.load_state_dict(model.state_dict())
    x = reference.get_inputs()[0]
    with torch.no_grad():
        torch.testing.assert_close(new(x), model(x), rtol=1e-4, atol=1e-4)
        model.mask.fill_(1.0)
        new.load_state_dict(model.state_dict())
        with pytest.raises(ValueError, match="not the causal mask"):
            new(x)
