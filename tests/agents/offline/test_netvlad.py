"""A NetVLAD-style aggregation layer (a soft assignment to clusters, its residuals, two L2
normalisations), the kind of whole-model head KernelBench's level 3 has: the trace takes
forward's device check, ``F.normalize`` is a norm, a clamp and a division, a slice
``[:, :K]`` of the assignment follows the constructor's K, a view's sizes read off the
input follow it, a tensor broadcast over a middle dim ((B, 1, K) into (B, D, K)) is read
by rows, and a transposed product feeding pointwise ops is a permute stage. The judge
passes the pipeline at the sizes it perturbs."""

from __future__ import annotations

import pytest

from agents.offline import OfflineEngine, run_offline
from agents.offline.ir.graph import build
from agents.offline.signature import from_source
from sandbox import Judge
from tests.agents.offline.cpu_harness import QUICK, analyse, check
from tests.agents.offline.test_bundled import ref

NETVLAD = ref("""
    import math


    class Model(nn.Module):
        def __init__(self, clusters, dim, ghosts):
            super().__init__()
            self.dim, self.clusters = dim, clusters
            self.weight = nn.Parameter(torch.randn(dim, clusters + ghosts) / math.sqrt(dim))
            self.norm = nn.BatchNorm1d(clusters + ghosts)
            self.centres = nn.Parameter(torch.randn(1, dim, clusters) / math.sqrt(dim))

        def forward(self, x):
            n = x.size()[1]
            x = x.view(-1, self.dim)
            if x.device != self.weight.device:
                raise ValueError("x and the clusters are on different devices")
            a = F.softmax(self.norm(torch.matmul(x, self.weight)), dim=1)
            a = a[:, :self.clusters].view(-1, n, self.clusters)
            centred = torch.sum(a, dim=1, keepdim=True) * self.centres
            vlad = torch.matmul(a.transpose(1, 2), x.view(-1, n, self.dim)).transpose(1, 2) - centred
            vlad = F.normalize(vlad)
            return F.normalize(vlad.reshape(-1, self.clusters * self.dim))
    """, "[torch.rand(batch, points, dim)]", "[clusters, dim, ghosts]",
    "batch = 12\npoints = 18\nclusters = 10\ndim = 24\nghosts = 6")


@pytest.fixture(scope="module")
def judge():
    with Judge() as j:
        yield j


def test_the_device_check_is_traced_and_every_op_is_read() -> None:
    analysis = analyse(NETVLAD)
    assert isinstance(analysis["graph"], list), analysis["graph"]
    traced = build(analysis)
    assert traced.output is not None and not traced.problems, traced.problems
    ops = {n.op for n in traced.output.walk() if n.kind == "op"}
    assert {"select", "clamp", "div", "sqrt"} <= ops and "normalize" not in ops


def test_the_cpu_pipeline_matches_torch() -> None:
    source = NETVLAD
    proposals = OfflineEngine("cpu").propose(analyse(source), 2, from_source(source))
    assert proposals and all(p.family == "pipeline" for p in proposals)
    for i, p in enumerate(proposals):
        check(source, p.source, f"netvlad{i}", atol=1e-5, rtol=1e-4)
        # the slice follows the constructor's cluster count, the view the input's points
        assert ":int(self.clusters_arg)]" in p.source and "x.shape[1]" in p.source, p.source[-3000:]
        assert "permute (0, 2, 1)" in p.source


def test_no_ghosts_is_a_whole_slice() -> None:
    """``a[:, :K]`` of K columns is the tensor itself."""
    source = NETVLAD.replace("ghosts = 6", "ghosts = 0")
    traced = build(analyse(source))
    assert traced.output is not None and "select" not in {n.op for n in traced.output.walk() if n.kind == "op"}


def test_netvlad_passes_the_judge(judge: Judge) -> None:
    result = run_offline(judge, NETVLAD, "netvlad.py", QUICK, max_candidates=1, engine=OfflineEngine("cpu"))
    assert result.best is not None, result.reason + str([a.reasons[:1] for a in result.attempts])
    assert result.best.verdict == "pass" and result.best.proposal.family == "pipeline"
