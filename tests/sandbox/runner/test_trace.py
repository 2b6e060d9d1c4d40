"""The analysis' torch.fx trace of a reference (sandbox/runner/phases/analyze.py): a Python
type given as a dtype (``dtype=bool``) is torch's dtype in the graph, a branch on the sizes
of a layer's output (Swin's ``assert L == H * W``, its padding) is decided by this call's
sizes, and where both traces fail the reason says why each did."""

from __future__ import annotations

import torch
import torch.nn as nn

from sandbox.runner.phases.analyze import fx_graph


class BoolMask(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.size(-1)
        mask = torch.tril(torch.ones(t, t, device=x.device, dtype=bool))
        return x.masked_fill(~mask, 0.0)


class SizedLoop(nn.Module):
    """A Python loop over a size and a data-dependent branch: neither trace gets through."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(x.size(0)):
            if x.sum() > 0:
                x = x - 1
        return x


class SizedBranch(nn.Module):
    """Swin's pattern: a layer, then branches on the sizes of what it returned."""

    def __init__(self, width: int, side: int) -> None:
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.side = side

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.proj(x)
        b, n, c = y.shape
        assert n == self.side * self.side, "wrong number of tokens"
        if c % 2:
            y = y * 3.0
        else:
            y = torch.relu(y)
        return y.view(b, self.side, self.side, c)


def test_a_branch_on_a_layers_output_sizes_is_decided_by_this_calls_sizes() -> None:
    nodes = fx_graph(SizedBranch(32, 4), [torch.randn(2, 16, 32)])
    assert isinstance(nodes, list), nodes
    targets = [n["target"] for n in nodes]
    assert "relu" in targets and "mul" not in targets, targets  # the even width's path
    assert nodes[-2]["shape"] == [2, 4, 4, 32]
    odd = fx_graph(SizedBranch(33, 4), [torch.randn(2, 16, 33)])
    assert isinstance(odd, list) and "mul" in [n["target"] for n in odd] and "relu" not in [n["target"] for n in odd]


def test_a_python_type_as_dtype_is_torchs_dtype_in_the_graph() -> None:
    nodes = fx_graph(BoolMask(), [torch.randn(2, 5, 5)])
    assert isinstance(nodes, list), nodes
    ones = next(n for n in nodes if n["target"] == "ones")
    assert ones["dtype"] == "bool" and ones["shape"] == [5, 5], ones
    assert nodes[-1]["op"] == "output"


def test_when_both_traces_fail_the_reason_names_each() -> None:
    why = fx_graph(SizedLoop(), [torch.randn(3, 4)])
    assert isinstance(why, str), why
    assert "traced with this call's sizes:" in why, why
