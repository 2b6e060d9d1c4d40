"""The `kforge eval` contract: one JSON object on stdout, exit 0/1/2."""

from __future__ import annotations

from tests.conftest import eval_json, run_kforge

REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale

rows = 9
cols = 301

def get_inputs():
    return [torch.randn(rows, cols)]

def get_init_inputs():
    return [3.0]
"""

HONEST = '''
"""relu(x) * scale in one Triton kernel."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_scale_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_scale_kernel[(triton.cdiv(n, 512),)](x, y, n, self.scale, BLOCK=512)
        return y
'''


def test_honest_candidate_passes(tmp_problem):
    code, out, _ = eval_json(tmp_problem("ref.py", REF), tmp_problem("cand.py", HONEST), "--timeout", "120")
    assert (code, out["verdict"], out["reasons"], out["correct"]) == (0, "pass", [], True)
    assert out["checks"]["perturbed_sizes"] == "pass" and out["checks"]["kernel_launched"] == "pass"
    assert out["speedup"] is None, "no GPU here: no speedup may be reported"
    assert "says nothing about GPU speed" in out["timing"]["label"]


def test_torch_candidate_fails_with_named_reasons(tmp_problem):
    cheat = HONEST.replace("relu_scale_kernel[(triton.cdiv(n, 512),)](x, y, n, self.scale, BLOCK=512)\n        return y",
                           "return torch.relu(x) * self.scale")
    code, out, _ = eval_json(tmp_problem("ref.py", REF), tmp_problem("cand.py", cheat))
    assert (code, out["verdict"]) == (1, "fail")
    assert out["checks"]["kernel_launched"] == "fail"
    assert out["checks"]["no_reference_ops"] == "fail"
    assert any("aten::relu" in r for r in out["reasons"])


def test_candidate_syntax_error_is_a_fail_naming_the_line(tmp_problem):
    code, out, _ = eval_json(tmp_problem("ref.py", REF), tmp_problem("cand.py", "import torch\n\ndef (\n"))
    assert (code, out["verdict"]) == (1, "fail")
    assert any("cand.py:3" in r for r in out["reasons"])


def test_unusable_reference_is_an_error_naming_the_line(tmp_problem):
    code, out, _ = eval_json(tmp_problem("ref.py", REF.replace("def get_inputs():", "def get_inputs(:")),
                             tmp_problem("cand.py", HONEST))
    assert (code, out["verdict"]) == (2, "error")
    assert "ref.py:" in out["reasons"][0]


def test_reference_that_raises_at_run_time_is_an_error(tmp_problem):
    broken = REF.replace("return [torch.randn(rows, cols)]", "raise ValueError('no inputs today')")
    code, out, _ = eval_json(tmp_problem("ref.py", broken), tmp_problem("cand.py", HONEST))
    assert (code, out["verdict"]) == (2, "error")
    assert "no inputs today" in out["reasons"][0] and "ref.py:" in out["reasons"][0]


def test_missing_file_and_bad_options_are_errors(tmp_problem):
    code, out, _ = eval_json("/nonexistent/ref.py", tmp_problem("cand.py", HONEST))
    assert (code, out["verdict"]) == (2, "error") and "/nonexistent/ref.py" in out["reasons"][0]
    code, out, _ = eval_json(tmp_problem("ref.py", REF), tmp_problem("cand.py", HONEST), "--timeout", "-1")
    assert (code, out["verdict"]) == (2, "error") and "--timeout" in out["reasons"][0]


def test_problems_list_json(tmp_problem):
    path = tmp_problem("ref.py", REF)
    proc = run_kforge("problems", "list", str(path.parent), "--json")
    assert proc.returncode == 0
    assert '"name": "ref"' in proc.stdout and "[9, 301]" in proc.stdout
