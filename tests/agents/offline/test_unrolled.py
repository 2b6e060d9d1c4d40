"""An RNN written out step by step in forward (issue 57, KernelBench level3/34's form): the
trace unrolls the Python loop, and ``ir/unrolled.py`` turns the stacked steps back into one
recurrent kernel under the head, applied to every step's state at once. The references here
are none of KernelBench's: the state first in the cat, ReLU, batch first, a head of a Linear
and an activation, any sequence length; what is not one cell over the whole sequence is
refused with the reason."""

from __future__ import annotations

import pytest

from agents.offline import OfflineEngine, run_offline
from agents.offline.ir.graph import build
from sandbox import Judge
from tests.agents.offline.cpu_harness import QUICK, analyse, check, cpu_proposals
from tests.agents.offline.test_bundled import ref

STATE_FIRST_RELU = ref("""
    class Model(nn.Module):
        def __init__(self, n_in, hidden, n_out):
            super().__init__()
            self.cell = nn.Linear(hidden + n_in, hidden)
            self.head = nn.Linear(hidden, n_out)

        def forward(self, x, h):
            ys = []
            for t in range(x.shape[0]):
                h = torch.relu(self.cell(torch.cat([h, x[t]], dim=-1)))
                ys.append(torch.sigmoid(self.head(h)))
            return torch.stack(ys)
    """, "[torch.randn(seq, batch, n_in), torch.randn(batch, hidden)]", "[n_in, hidden, n_out]",
    "seq = 11\nbatch = 3\nn_in = 20\nhidden = 16\nn_out = 9")

BATCH_FIRST = ref("""
    class Model(nn.Module):
        def __init__(self, n_in, hidden):
            super().__init__()
            self.i2h = nn.Linear(n_in + hidden, hidden)

        def forward(self, x, h0):
            h, outs = h0, []
            for t in range(x.shape[1]):
                h = torch.tanh(self.i2h(torch.cat((x[:, t], h), 1)))
                outs.append(h * 2.0)
            return torch.stack(outs, dim=1)
    """, "[torch.randn(batch, seq, n_in), torch.randn(batch, hidden)]", "[n_in, hidden]",
    "batch = 4\nseq = 9\nn_in = 13\nhidden = 10")


@pytest.mark.parametrize("source", [STATE_FIRST_RELU, BATCH_FIRST], ids=["state_first_relu", "batch_first"])
def test_the_candidate_matches_torch(source: str) -> None:
    proposals = cpu_proposals(source, 1)
    assert proposals and proposals[0].family == "pipeline", [p.family for p in proposals]
    assert "RNN, 1 layer(s)" in proposals[0].source
    check(source, proposals[0].source, "unrolled", atol=1e-4, rtol=1e-4)


def test_an_unrolled_rnn_passes_the_judge() -> None:
    with Judge() as judge:
        result = run_offline(judge, STATE_FIRST_RELU, "unrolled.py", QUICK, max_candidates=1,
                             engine=OfflineEngine("cpu"))
    assert result.best is not None, result.reason + str([a.reasons[:1] for a in result.attempts])
    assert result.best.verdict == "pass"


@pytest.mark.parametrize("change, why", [
    ("range(x.shape[0])", "range(x.shape[0] - 2)"),  # the loop stops short of the sequence's end
    ("ys.append(torch.sigmoid(self.head(h)))", "ys.append(torch.sigmoid(self.head(h)) + x[t][:, :9])"),
])
def test_what_is_not_one_cell_over_the_sequence_is_refused(change: str, why: str) -> None:
    problems = build(analyse(STATE_FIRST_RELU.replace(change, why))).problems
    assert any("not the steps of one recurrent cell" in p for p in problems), problems
