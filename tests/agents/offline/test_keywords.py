"""A functional call spelled with keywords only (``F.linear(input=x, weight=w, bias=b)``, as
SwinV2's attention writes it) is the same op as the positional call."""

from __future__ import annotations

from agents.offline.ir.graph import build
from tests.agents.offline.cpu_harness import analyse, check, cpu_proposals
from tests.agents.offline.test_bundled import ref

KEYWORDS = ref("""
    class Model(nn.Module):
        def __init__(self, n_in, n_out):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(n_out, n_in))
            self.bias = nn.Parameter(torch.randn(n_out))

        def forward(self, x):
            return torch.tanh(F.linear(input=x, weight=self.weight, bias=self.bias))
    """, "[torch.randn(batch, n_in)]", "[n_in, n_out]", "batch = 6\nn_in = 40\nn_out = 24")


def test_a_linear_called_by_keywords_gets_a_kernel_that_matches_torch() -> None:
    traced = build(analyse(KEYWORDS))
    assert traced.output is not None and not traced.problems, traced.problems
    proposals = cpu_proposals(KEYWORDS, 1)
    assert proposals
    check(KEYWORDS, proposals[0].source, "keywords")
