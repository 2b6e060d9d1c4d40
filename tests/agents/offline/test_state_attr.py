"""A tensor kept as a plain attribute, not in the state_dict (an RNN cell's hidden state,
KernelBench level3/33): forward copies its input into it, reads it back and assigns the new
state to it. The trace leaves the module as it found it, the read after the copy is the
input, and the engine's candidate passes the judge; a read of the state before any copy is
refused, since its value is whatever the last call left there."""

from __future__ import annotations

import pytest

from agents.offline import OfflineEngine, run_offline
from agents.offline.ir.graph import build
from sandbox import Judge
from tests.agents.offline.cpu_harness import QUICK, analyse
from tests.agents.offline.test_bundled import ref

CELL = ref("""
    class Model(nn.Module):
        def __init__(self, inputs, hidden, outputs):
            super().__init__()
            self.hidden = torch.randn((batch, hidden))
            self.i2h = nn.Linear(inputs + hidden, hidden)
            self.h2o = nn.Linear(hidden, outputs)
            self.tanh = nn.Tanh()

        def forward(self, x, initial_hidden=None):
            if initial_hidden is not None:
                self.hidden.copy_(initial_hidden)
            self.hidden = self.hidden.to(x.device)
            combined = torch.cat((x, self.hidden), dim=1)
            self.hidden = self.tanh(self.i2h(combined))
            return self.h2o(self.hidden)
    """, "[torch.rand(batch, inputs), torch.rand(batch, hidden)]", "[inputs, hidden, outputs]",
    "batch = 8\ninputs = 24\nhidden = 40\noutputs = 16")

UNCOPIED = CELL.replace("self.hidden.copy_(initial_hidden)", "x = x + 0")
assert UNCOPIED != CELL


@pytest.fixture(scope="module")
def judge():
    with Judge() as j:
        yield j


def test_the_trace_leaves_the_module_and_ends_at_its_output() -> None:
    graph = analyse(CELL)["graph"]
    assert graph[-1]["op"] == "output"
    assert not [n for n in graph if "_tensor_constant" in str(n["target"])]
    assert all(n["shape"] is not None for n in graph if n["op"] == "call_module")


def test_the_state_read_after_the_copy_is_the_input() -> None:
    traced = build(analyse(CELL))
    assert traced.output is not None, traced.problems
    cat, = [n for n in traced.output.walk() if n.kind == "op" and n.op == "cat"]
    assert [a.kind for a in cat.args] == ["input", "input"] and cat.args[1].ref == "initial_hidden"


def test_a_state_read_before_any_copy_is_refused() -> None:
    traced = build(analyse(UNCOPIED, "uncopied.py"))
    assert traced.output is None or any("state outside the state_dict" in p for p in traced.problems)
    assert OfflineEngine("cpu").propose(analyse(UNCOPIED, "uncopied.py"), 1) == []


def test_the_cell_passes_the_judge(judge: Judge) -> None:
    result = run_offline(judge, CELL, "rnn_cell.py", QUICK, max_candidates=1, engine=OfflineEngine("cpu"))
    assert result.best is not None, result.reason + str([a.reasons[:1] for a in result.attempts])
    assert result.best.verdict == "pass"
    # the constructor is the reference's, less the state made from a module constant (batch)
    init = result.best.proposal.source.split("class ModelNew")[1].split("def stage0")[0]
    assert "nn.Linear(inputs + hidden, hidden)" in init and "self.hidden" not in init
