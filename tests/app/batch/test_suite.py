"""Suites: a KernelBench checkout's layout read unchanged, and our problems/."""

from __future__ import annotations

from pathlib import Path

from app.batch.suite import discover, suite_root
from sandbox import load_problem
from tests.conftest import ROOT

# Problems written for this test, in KernelBench's file naming and format.
MATMUL = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B for square matrices."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


N = 40


def get_inputs():
    A = torch.randn(N, N)
    B = torch.randn(N, N)
    return [A, B]


def get_init_inputs():
    return []
'''
ACTIVATION = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.{op}(x)


batch_size = 12
dim = 300


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''
FUSED = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x)) * 0.5


batch_size = 9
in_features = 24
out_features = 18


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
'''


def fake_checkout(root: Path) -> Path:
    kb = root / "KernelBench"
    files = {
        "level1/1_Square_matrix_multiplication_.py": MATMUL,
        "level1/2_ReLU.py": ACTIVATION.format(op="relu"),
        "level1/10_Sigmoid.py": ACTIVATION.format(op="sigmoid"),
        "level2/1_Linear_ReLU_Scale.py": FUSED,
        "level2/3_Broken.py": "class Model(:\n",
    }
    for rel, text in files.items():
        (kb / rel).parent.mkdir(parents=True, exist_ok=True)
        (kb / rel).write_text(text)
    # Not problems: the checkout's scripts and sources live beside KernelBench/.
    for rel in ("scripts/run_and_check.py", "src/eval.py", "KernelBench/README.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("print('not a problem')\n")
    return kb


def test_checkout_root_and_its_kernelbench_folder_give_the_same_problems(tmp_path):
    kb = fake_checkout(tmp_path)
    assert suite_root(tmp_path) == kb and suite_root(kb) == kb
    ids = [p.id for p in discover(tmp_path)]
    assert ids == ["level1/1_Square_matrix_multiplication_", "level1/2_ReLU", "level1/10_Sigmoid",
                   "level2/1_Linear_ReLU_Scale", "level2/3_Broken"]
    assert [p.id for p in discover(kb)] == ids


def test_levels_globs_and_unusable_files(tmp_path):
    fake_checkout(tmp_path)
    problems = {p.id: p for p in discover(tmp_path)}
    assert {p.level for p in problems.values()} == {1, 2}
    assert [p.id for p in discover(tmp_path, level=2)] == ["level2/1_Linear_ReLU_Scale", "level2/3_Broken"]
    assert [p.id for p in discover(tmp_path, pattern="*_ReLU*")] == ["level1/2_ReLU", "level2/1_Linear_ReLU_Scale"]
    assert [p.id for p in discover(tmp_path, level=1, pattern="level1/1*")] == [
        "level1/1_Square_matrix_multiplication_", "level1/10_Sigmoid"]
    assert "SyntaxError" in problems["level2/3_Broken"].error
    assert all(p.error is None for k, p in problems.items() if k != "level2/3_Broken")


def test_kernelbench_files_load_unchanged(tmp_path):
    fake_checkout(tmp_path)
    problems = {p.id: p for p in discover(tmp_path)}
    mm = load_problem(problems["level1/1_Square_matrix_multiplication_"].path)
    assert mm.level == 1 and mm.constants == {"N": 40} and mm.input_shapes == [[40, 40], [40, 40]]
    fused = load_problem(problems["level2/1_Linear_ReLU_Scale"].path)
    assert fused.level == 2 and fused.size_constants() == {"batch_size": 9, "in_features": 24, "out_features": 18}


def test_bundled_suite_skips_solutions():
    found = discover(ROOT / "problems")
    assert found and all("solutions" not in p.path for p in found)
    assert "level1/1_relu_scale" in {p.id for p in found}
    assert all(p.level in (1, 2, 3) for p in found)
