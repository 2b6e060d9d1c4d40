"""Recurrent layers through the offline engine's C template (KernelBench level3/33-42's
kinds, small): nn.LSTM, nn.GRU and nn.RNN, stacked, bidirectional, batch first or not,
with or without an initial state, forward returning the output, h_n or c_n, or a linear
head on the last step (``out[:, -1, :]``). The candidate is checked against torch here
(in process: trusted bundled-style references) at the sizes it was written for and at
other input and hidden sizes; one goes through the real judge."""

from __future__ import annotations

import pytest

from agents.offline.engine import OfflineEngine
from agents.offline.signature import from_source
from sandbox import EvalOptions, Judge

from .cpu_harness import analyse, check, cpu_proposals

TEMPLATE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, output_size):
        super().__init__()
        self.rnn = {layer}
        self.fc = nn.Linear(hidden_size * {directions}, output_size)

    def forward({args}):
        {body}


batch_size = 3
seq_len = 9
input_size = 12
hidden_size = 16
num_layers = {layers}
output_size = 10


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return [input_size, hidden_size, num_layers, output_size]
'''

X_BF = "torch.randn(batch_size, seq_len, input_size)"
X_TF = "torch.randn(seq_len, batch_size, input_size)"
H = "torch.randn(num_layers * {d}, batch_size, hidden_size)"

CASES = {
    # KernelBench 36: a stacked LSTM's h_n
    "lstm_h_n": dict(layer="nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)", directions=1,
                     args="self, x, h0, c0", body="out, state = self.rnn(x, (h0, c0))\n        return state[0]",
                     layers=2, inputs=", ".join([X_BF, H.format(d=1), H.format(d=1)])),
    # KernelBench 38: bidirectional, a linear head on the last step
    "lstm_bidirectional_head": dict(
        layer="nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, bidirectional=True)", directions=2,
        args="self, x, h0, c0", body="out, _ = self.rnn(x, (h0, c0))\n        return self.fc(out[:, -1, :])",
        layers=2, inputs=", ".join([X_BF, H.format(d=2), H.format(d=2)])),
    # KernelBench 37: c_n, here without biases
    "lstm_c_n_no_bias": dict(layer="nn.LSTM(input_size, hidden_size, num_layers, bias=False)", directions=1,
                             args="self, x, h0, c0", body="_, (h, c) = self.rnn(x, (h0, c0))\n        return c",
                             layers=1, inputs=", ".join([X_TF, H.format(d=1), H.format(d=1)])),
    # KernelBench 41: a bidirectional GRU's output, time first
    "gru_bidirectional": dict(layer="nn.GRU(input_size, hidden_size, num_layers, bidirectional=True)",
                              directions=2, args="self, x, h0", body="output, h_n = self.rnn(x, h0)\n        return output",
                              layers=2, inputs=", ".join([X_TF, H.format(d=2)])),
    # KernelBench 35: forward draws h0 / c0 with torch.randn when they are not given
    "lstm_drawn_state": dict(
        layer="nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)", directions=1,
        args="self, x, h0=None, c0=None",
        body="if h0 is None:\n            h0 = torch.randn(self.rnn.num_layers, x.size(0), self.rnn.hidden_size, "
             "device=x.device)\n        if c0 is None:\n            c0 = torch.randn(self.rnn.num_layers, x.size(0), "
             "self.rnn.hidden_size, device=x.device)\n        out, _ = self.rnn(x, (h0, c0))\n"
             "        return self.fc(out[:, -1, :])",
        layers=2, inputs=X_BF),
    # a plain RNN with relu, no initial state (zeros)
    "rnn_relu_no_state": dict(layer="nn.RNN(input_size, hidden_size, num_layers, nonlinearity='relu', "
                                    "batch_first=True)", directions=1, args="self, x",
                              body="_, h = self.rnn(x)\n        return h", layers=3, inputs=X_BF),
}


def source(name: str) -> str:
    return TEMPLATE.format(**CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_engine_writes_the_recurrent_layer_in_c_and_it_follows_other_sizes(name: str) -> None:
    reference = source(name)
    proposals = cpu_proposals(reference, 2)
    assert proposals, f"{name}: no C proposal"
    # the first two variants: the input product by oneDNN's sgemm, then by OpenBLAS's
    assert [("dnnl_sgemm" in p.source, "cblas_sgemm" in p.source) for p in proposals[:2]] == [(True, False), (False, True)]
    candidate = proposals[0].source
    assert "rnn_steps" in candidate and "kf_tile" in candidate
    check(reference, candidate, f"rnn_{name}", atol=1e-5, rtol=1e-4)
    # the same candidate at sizes it was not written for (the judge's perturbed sizes): a hidden
    # size that is no multiple of the 16-unit blocks, one and several tiles of state rows
    # (13 x 70: over par_min, the steps split over the threads, five blocks, the last partial)
    for batch, hidden in ((5, 11), (13, 70)):
        other = reference.replace("batch_size = 3", f"batch_size = {batch}").replace("seq_len = 9", "seq_len = 4") \
            .replace("input_size = 12", "input_size = 7").replace("hidden_size = 16", f"hidden_size = {hidden}")
        check(other, candidate, f"rnn_{name}_{batch}_{hidden}", atol=1e-5, rtol=1e-4)
    check(reference, proposals[1].source, f"rnn_{name}_blas", atol=1e-5, rtol=1e-4)


def test_a_recurrent_layer_the_template_cannot_write_says_why() -> None:
    reference = source("lstm_h_n").replace("batch_first=True)", "batch_first=True, proj_size=8)") \
        .replace("torch.randn(num_layers * 1, batch_size, hidden_size)", "torch.randn(num_layers, batch_size, 8)", 1)
    analysis = analyse(reference)
    engine = OfflineEngine(backend="cpu")
    assert engine.propose(analysis, 2, from_source(reference)) == []
    assert "proj_size" in engine.plan(analysis, 2, from_source(reference)).reason


@pytest.mark.parametrize("name", ["lstm_bidirectional_head", "lstm_drawn_state"])
def test_the_judge_verifies_a_recurrent_layer(name: str) -> None:
    """The bidirectional LSTM with a head; and KernelBench 35's initial states drawn in forward,
    which the candidate must draw alike under the judge's forward seed."""
    reference = source(name)
    candidate = cpu_proposals(reference, 1)[0].source
    options = EvalOptions(device="cpu", timing_sets=1, time_reps=3, compile_baseline=False)
    with Judge(warm=False) as judge:
        result = judge.evaluate(reference, candidate, f"{name}.py", "candidate.py", options)
    assert result.verdict == "pass", result.reasons
    assert result.perturbed, "the judge ran no perturbed sizes"


def test_drawn_initial_states_in_another_order_are_not_written() -> None:
    """c0 drawn before h0: the host draws h0 first, so it would draw other values."""
    draw = "torch.randn(self.rnn.num_layers, x.size(0), self.rnn.hidden_size, device=x.device)"
    h = f"        if h0 is None:\n            h0 = {draw}\n"
    c = f"        if c0 is None:\n            c0 = {draw}\n"
    reference = source("lstm_drawn_state")
    assert h + c in reference
    assert cpu_proposals(reference, 1)
    assert cpu_proposals(reference.replace(h + c, c + h), 2) == []


@pytest.mark.parametrize("name", ["lstm_bidirectional_head", "gru_bidirectional"])
def test_every_parameter_set_splits_the_hidden_units_between_threads_right(name: str) -> None:
    """At a hidden size of 37 (not a multiple of the 8 units a thread's block is rounded to) and
    4 x 4 x 37 x 37 multiply-adds a step, the parameter sets below 2^17 run each step on every
    thread, each owning a block of units; every set must match torch."""
    reference = source(name).replace("batch_size = 3", "batch_size = 4").replace("hidden_size = 16", "hidden_size = 37")
    proposals = cpu_proposals(reference, 4)
    assert len(proposals) == 4 and any("B * G * H * H > 16384)" in p.source for p in proposals)
    for i, proposal in enumerate(proposals):
        check(reference, proposal.source, f"rnn_{name}_split_{i}", atol=1e-5, rtol=1e-4)
