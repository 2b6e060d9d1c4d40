"""Render a C template for a reference and check it against torch, without the judge:
the reference is analysed in this process (trusted test code, bundled problems only),
the candidate is imported from a temporary file and its kernels built by kforge_native."""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from agents.offline.engine import OfflineEngine
from agents.offline.signature import from_source
from sandbox import EvalOptions
from sandbox.runner.phases.analyze import run_analyze

# The judge on the CPU with the least timing that still yields a speedup: tests check
# verdicts, not speed (speed is measured in benchmarks/), and full native timing with a
# torch.compile baseline costs tens of seconds per problem.
QUICK = EvalOptions(device="cpu", timing_sets=1, time_reps=5, compile_baseline=False)


def analyse(source: str, name: str = "ref.py") -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    run_analyze({"device": "cpu", "source": source, "filename": name, "seed": 0}, out.append)
    analysis = out[-1]
    analysis.setdefault("device", "cpu")
    return analysis


def load_source(source: str, name: str) -> ModuleType:
    path = Path(tempfile.mkdtemp(prefix="kforge-cpu-test-")) / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def cpu_proposals(source: str, max_candidates: int = 16) -> list[Any]:
    engine = OfflineEngine(backend="cpu")
    return engine.propose(analyse(source), max_candidates, from_source(source))


def check(reference: str, candidate: str, tag: str, atol: float = 1e-4, rtol: float = 1e-4) -> float:
    """Max abs error of the candidate against the reference on the reference's own inputs."""
    ref = load_source(reference, f"ref_{tag}")
    cand = load_source(candidate, f"cand_{tag}")
    torch.manual_seed(0)
    init = list(ref.get_init_inputs())
    model = ref.Model(*init)
    new = cand.ModelNew(*init)
    new.load_state_dict(model.state_dict())
    inputs = list(ref.get_inputs())
    with torch.no_grad():  # each call under the same seed: a forward that draws draws alike (as the judge seeds)
        torch.manual_seed(1)
        want = model(*inputs)
        torch.manual_seed(1)
        got = new(*inputs)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    torch.testing.assert_close(got, want, atol=atol, rtol=rtol)
    return float((got - want).abs().max()) if got.numel() else 0.0
