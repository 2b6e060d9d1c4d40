"""The analysis' torch.fx trace of a reference (sandbox/runner/phases/analyze.py): a Python
type given as a dtype (``dtype=bool``) is torch's dtype in the graph, and where both traces
fail the reason says why each did."""

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
