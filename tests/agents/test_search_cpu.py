"""The LLM path with backend cpu, end to end: real judge, real SDK client, scripted model on
loopback. The model is told the C candidate format and the CPU profile, its C that does not
compile comes back with gcc's message, the repaired kernel is timed for real, and the offline
engine's C starters are judged in round 0; the fastest verified kernel is the best."""

from __future__ import annotations

import pytest

from agents.offline import OfflineEngine
from agents.providers import make_provider
from agents.search import Search, SearchConfig
from sandbox import EvalOptions, Judge
from tests.agents import scripted
from tests.fakes.llm_server import FakeLLMServer, Reply

GOOD_C = '''import torch
import torch.nn as nn
from kforge_native import load_c

SRC = r\'\'\'
#include <stdint.h>
void relu_scale(const float* x, float* y, int64_t n, float s) {
    #pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] > 0.0f ? x[i] : 0.0f) * s;
}
\'\'\'
lib = load_c(SRC, ["void relu_scale(const float* x, float* y, int64_t n, float s)"], name="relu_scale")


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu_scale(x, y, x.numel(), self.scale)
        return y
'''
BROKEN_C = GOOD_C.replace("* s;\n", "* s\n")  # a missing semicolon: gcc says so
PLAN = '```json\n{"strategies": [{"title": "fused relu-scale C loop", "rationale": "one pass", ' \
       '"steps": "omp parallel for simd"}]}\n```'
SCRIPT = [PLAN, "One loop.\n```python\n" + BROKEN_C + "```", "Added the semicolon.\n```python\n" + GOOD_C + "```",
          scripted.REVIEW]


@pytest.fixture(scope="module")
def judge():
    with Judge(warm=True) as j:
        yield j


def test_cpu_backend_llm_and_offline_rounds(judge, tmp_path):
    with FakeLLMServer() as srv:
        srv.queue(*[Reply(text) for text in SCRIPT])
        provider = make_provider("openai", base_url=srv.openai_base_url, api_key="sk-test-key")
        config = SearchConfig(max_rounds=1, candidates_per_round=1, max_repairs=1, offline_starters=2, backend="cpu")
        # the app hands over its default (Triton) engine; the search asks it for the cpu backend's C templates
        search = Search(judge, EvalOptions(device="cpu"), provider=provider, config=config, offline=OfflineEngine(),
                        trajectory_path=tmp_path / "traj.json")
        traj = search.run(scripted.PROBLEM.read_text(), scripted.PROBLEM.name)
        requests = [str(r.body) for r in srv.requests]

    attempts = {a.id: a for a in traj.attempts()}
    assert list(attempts) == ["r0-c0", "r0-c1", "r1-c0", "r1-c0-fix1"]
    for offline in ("r0-c0", "r0-c1"):
        assert "from kforge_native import load_c" in attempts[offline].code
        assert attempts[offline].verdict == "pass" and attempts[offline].speedup is not None
    # the planner saw the CPU system prompt, per-op times and the CPU; the coder the C format
    assert "backend is cpu" in requests[0] and "us per forward" in requests[0] and "gcc -O3" in requests[0]
    assert "kforge_native" in requests[1] and "module-level string literal" in requests[1]
    # C that does not compile fails the compile check with gcc's message, which reaches the repair
    broken = attempts["r1-c0"]
    assert broken.verdict == "fail" and any(r.startswith("compile") for r in broken.reasons), broken.reasons
    assert "expected" in requests[2] and "error" in requests[2]
    fixed = attempts["r1-c0-fix1"]
    assert fixed.verdict == "pass" and fixed.speedup is not None
    # the reviewer got the CPU reviewer prompt and real numbers
    assert "OpenMP" in requests[3] and "vs eager" in requests[3]
    timed = [a for a in attempts.values() if a.verdict == "pass"]
    assert traj.best() is max(timed, key=lambda a: a.speedup or 0.0)
