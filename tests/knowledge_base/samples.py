"""Hand-written inputs shaped like the judge's analysis and the search loop's trajectory
(``Trajectory.to_dict()``), without importing either."""

from __future__ import annotations

from typing import Any

SOFTMAX_REF = '''"""Softmax over the last dim."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)  # the whole problem


batch_size = 4096
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''


def softmax_analysis(hardware: str = "NVIDIA H100 80GB HBM3 (sm_90)") -> dict[str, Any]:
    return {
        "device": "cuda", "hardware": hardware, "init_inputs": [],
        "inputs": [{"shape": [4096, 16384], "dtype": "float32", "stride": [16384, 1]}],
        "outputs": [{"shape": [4096, 16384], "dtype": "float32", "stride": [16384, 1]}],
        "parameters": {}, "ops": {"_softmax": 1},
        "graph": [
            {"name": "x", "op": "placeholder", "target": "x", "module": None, "args": [], "kwargs": {},
             "shape": [4096, 16384], "dtype": "float32", "attrs": {}},
            {"name": "softmax", "op": "call_function", "target": "softmax", "module": None, "args": ["x"],
             "kwargs": {"dim": -1}, "shape": [4096, 16384], "dtype": "float32", "attrs": {}},
            {"name": "output", "op": "output", "target": "output", "module": None, "args": ["softmax"],
             "kwargs": {}, "shape": None, "dtype": None, "attrs": {}},
        ],
        "graph_error": None,
        "profile": [{"op": "aten::_softmax", "self_us": 812.0, "calls": 1, "share": 1.0}],
    }


def attempt(id: str, strategy: str, source: str, verdict: str, speedup: float | None, code: str = "",
            reasons: list[str] | None = None, round: int = 0, repair_of: str | None = None) -> dict[str, Any]:
    return {"id": id, "round": round, "strategy": strategy, "code": code or f"# kernel {id}\nclass ModelNew: ...",
            "source": source, "parent_id": None, "verdict": verdict, "reasons": reasons or [], "checks": {},
            "speedup": speedup, "timing": {}, "review": {}, "repair_of": repair_of, "input_tokens": 0,
            "output_tokens": 0, "cost_usd": 0.0, "elapsed_s": 1.0, "prompt_excerpt": ""}


def softmax_trajectory(reference: str = SOFTMAX_REF) -> dict[str, Any]:
    """What Trajectory.to_dict() gives for an offline round and one LLM round (one repair)."""
    p0 = "offline: softmax {'MAX_BLOCK': 4096, 'num_warps': 4}"
    p1 = "offline: softmax {'MAX_BLOCK': 8192, 'num_warps': 8}"
    return {
        "problem": "10_softmax.py", "reference": reference, "config": {"max_rounds": 1, "backend": "triton"},
        "label": "llm: fake/model",
        "rounds": [
            {"index": 0, "replanned": False,
             "plan": [{"title": p0, "rationale": "softmax; MAX_BLOCK=4096, num_warps=4"},
                      {"title": p1, "rationale": "softmax; MAX_BLOCK=8192, num_warps=8"}],
             "attempts": [attempt("r0-c0", p0, "offline", "pass", 1.31), attempt("r0-c1", p1, "offline", "pass", 1.62)]},
            {"index": 1, "replanned": False,
             "plan": [{"title": "Online softmax in one read [seed-online-softmax]",
                       "rationale": "the rows are 16k long; one pass with a running max", "steps": "..."},
                      {"title": "Two-kernel softmax with atomics for the row sums",
                       "rationale": "split each row over several programs", "steps": "atomic_add partial sums"}],
             "attempts": [
                 attempt("r1-c0", "Online softmax in one read [seed-online-softmax]", "llm", "pass", 1.85, round=1),
                 attempt("r1-c1", "Two-kernel softmax with atomics for the row sums", "llm", "fail", None,
                         reasons=["deterministic: two runs differ by 3e-6"], round=1),
                 attempt("r1-c1-fix1", "Two-kernel softmax with atomics for the row sums", "llm", "pass", 0.74,
                         round=1, repair_of="r1-c1")]},
        ],
        "usage": {"input_tokens": 1000, "output_tokens": 500, "cost_usd": 0.01},
        "started_at": 1795305600.0, "elapsed_s": 120.0, "stop_reason": "rounds finished",
        "strategies_used": [{"id": "seed-online-softmax", "title": "Online softmax: running max and rescaled sum",
                             "source": "seed"}],
    }
