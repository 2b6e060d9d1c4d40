"""The layer families of the offline engine (pooling; arg-reductions and scans as they
land): every C parameter set and the first Triton ones checked against torch on the
inline references of tests/agents/layer_cases.py (no judge; Triton in its interpreter,
in a child process), and the bundled problems through the real judge on both backends.
The bundled wrong solutions failing is tests/problems/test_bundled_suite.py's job."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.offline import OfflineEngine, run_offline
from sandbox import EvalOptions, Judge
from tests.agents.cpu_harness import analyse, check, cpu_proposals
from tests.agents.layer_cases import POOLING

ROOT = Path(__file__).resolve().parents[2]
CPU = EvalOptions(device="cpu")
CASES = {**{k: ("pooling" if k != "adaptive" else "reduction", v) for k, v in POOLING.items()}}
BUNDLED = {
    "problems/level1/24_max_pool2d.py": "pooling",
    "problems/level1/25_avg_pool2d_padded.py": "pooling",
    "problems/level1/26_max_pool1d_dilated.py": "pooling",
}

TRITON_CHECK = """
import json, sys
from agents.offline import OfflineEngine
from agents.offline.signature import from_source
from tests.agents.cpu_harness import analyse, check
source, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
props = OfflineEngine("triton").propose(analyse(source), n, from_source(source))
print(json.dumps([[p.family, check(source, p.source, f"{tag}{i}")] for i, p in enumerate(props)]))
"""


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_c_parameter_set_matches_torch(name: str) -> None:
    family, source = CASES[name]
    proposals = cpu_proposals(source)
    assert proposals and proposals[0].family == family, [p.family for p in proposals]
    assert len(proposals) == len(OfflineEngine("cpu").autotune_space(family))
    for i, p in enumerate(proposals):
        check(source, p.source, f"{name}_{i}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_triton_kernels_match_torch_in_the_interpreter(name: str) -> None:
    family, source = CASES[name]
    proc = subprocess.run([sys.executable, "-c", TRITON_CHECK, source, f"t_{name}", "2"], cwd=ROOT,
                          env={**os.environ, "TRITON_INTERPRET": "1"}, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(results) == 2 and all(f == family for f, _ in results), results


def test_pool_settings_follow_the_constructor() -> None:
    """Kernel, stride, padding and dilation are read from the constructor's arguments (the judge
    perturbs them), by value when unique and by name when two arguments hold the same value."""
    source = POOLING["max3d"]  # kernel_size = 3 and dilation = 3
    (proposal, *_) = cpu_proposals(source, 1)
    assert "return pool(x, (self.kernel_size, self.kernel_size, self.kernel_size), (self.stride, self.stride, " \
           "self.stride), (1, 1, 1), (self.dilation, self.dilation, self.dilation))" in proposal.source
    assert analyse(source)["graph"][1]["attrs"]["dilation"] == 3  # the analysis reports it


@pytest.fixture(scope="module")
def judge():
    with Judge(warm=True) as j:
        yield j


@pytest.mark.parametrize("backend", ["cpu", "triton"])
@pytest.mark.parametrize("path", sorted(BUNDLED))
def test_bundled_problem_gets_a_verified_kernel(judge: Judge, path: str, backend: str) -> None:
    source = (ROOT / path).read_text()
    result = run_offline(judge, source, path, CPU, max_candidates=2 if backend == "cpu" else 1,
                         engine=OfflineEngine(backend))
    assert result.best is not None, result.reason + str([a.reasons[:1] for a in result.attempts])
    assert result.best.proposal.family == BUNDLED[path] and result.best.verdict == "pass"
    if backend == "cpu":
        assert result.best.speedup is not None
