"""Problem signatures (same problem at other sizes -> same key) and op families from an analysis."""

from __future__ import annotations

from knowledge_base import arch_of, op_families, problem_signature
from knowledge_base.problem_identity import normal_form, shape_regime

from .samples import SOFTMAX_REF, softmax_analysis

# The same module: other sizes, comments, docstrings, formatting, type hints and variable names.
SOFTMAX_RESIZED = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    """A different docstring."""
    def __init__(self):
        super().__init__()
    def forward(self, inp):
        # comments do not matter
        return torch.softmax(inp,   dim=-1)

batch_size = 128   # smaller
dim = 1024

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return []
'''


def test_same_module_at_other_sizes_has_the_same_signature() -> None:
    assert problem_signature(SOFTMAX_REF) == problem_signature(SOFTMAX_RESIZED)
    assert problem_signature(SOFTMAX_REF).startswith("v1:") and len(problem_signature(SOFTMAX_REF)) == 3 + 64


def test_a_different_op_has_a_different_signature() -> None:
    log_softmax = SOFTMAX_REF.replace("torch.softmax", "torch.log_softmax")
    assert problem_signature(log_softmax) != problem_signature(SOFTMAX_REF)
    other_dim = SOFTMAX_REF.replace("dim=-1", "dim=0")
    assert problem_signature(other_dim) != problem_signature(SOFTMAX_REF)


def test_small_constants_that_are_not_sizes_are_kept() -> None:
    one = SOFTMAX_REF.replace("dim = 16384", "dim = 16384\nreduce_dim = 1")
    zero = SOFTMAX_REF.replace("dim = 16384", "dim = 16384\nreduce_dim = 0")
    assert problem_signature(one) != problem_signature(zero)
    k3 = SOFTMAX_REF.replace("dim = 16384", "dim = 16384\nkernel_size = 3")
    assert problem_signature(k3) != problem_signature(k3.replace("kernel_size = 3", "kernel_size = 5"))
    small_batch = SOFTMAX_REF.replace("batch_size = 4096", "batch_size = 2")  # named as a size: normalised
    assert problem_signature(small_batch) == problem_signature(SOFTMAX_REF)


def test_normal_form_has_no_comments_docstrings_or_local_names() -> None:
    text = normal_form(SOFTMAX_REF)
    assert "whole problem" not in text and "Softmax over" not in text
    assert "def forward(self, a0):" in text and "batch_size = _SIZE" in text


def test_unparsable_source_still_gets_a_signature() -> None:
    assert problem_signature("def broken(:\n  pass") == problem_signature("def   broken(:\n pass")


def node(name: str, op: str, target: str) -> dict:
    return {"name": name, "op": op, "target": target, "args": [], "kwargs": {}, "attrs": {}}


def test_op_families_from_ops_and_graph() -> None:
    assert op_families(softmax_analysis()) == ["softmax"]
    linear = {"ops": {"addmm": 1, "gelu": 1}, "graph": [node("fc", "call_module", "Linear"),
                                                        node("g", "call_function", "gelu")]}
    assert op_families(linear) == ["matmul", "elementwise"]
    conv = {"ops": {}, "graph": [node("c", "call_module", "Conv2d"), node("p", "call_module", "MaxPool2d"),
                                 node("r", "call_module", "ReLU")]}
    assert op_families(conv) == ["conv", "pool", "elementwise"]
    assert op_families({"ops": {"native_layer_norm": 1}}) == ["norm"]
    assert op_families({"ops": {"sum": 1}}) == ["reduction"]
    assert op_families({"ops": {}, "graph": []}) == ["other"]


def test_written_out_patterns_are_recognised() -> None:
    softmax = {"ops": {"amax": 1, "sub": 1, "exp": 1, "sum": 1, "div": 1}}
    assert op_families(softmax)[0] == "softmax"
    attention = {"ops": {"bmm": 2, "_softmax": 1, "mul": 1}}
    assert op_families(attention)[0] == "attention"
    rms = {"ops": {"pow": 1, "mean": 1, "add": 1, "rsqrt": 1, "mul": 2}}
    assert "norm" in op_families(rms)


def test_arch_and_shape_regime() -> None:
    assert arch_of(softmax_analysis()) == "sm_90"
    assert arch_of({"device": "cpu", "hardware": "CPU only: Triton runs in its interpreter; no GPU timing"}) == "cpu"
    assert "[4096, 16384] float32" in shape_regime(softmax_analysis())
    assert "long rows" in shape_regime(softmax_analysis())
