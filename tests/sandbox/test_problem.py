"""Static reading of problem files: no user code is imported."""

from __future__ import annotations

import pytest

from sandbox import ProblemError, list_problems, load_problem
from sandbox.judge import perturbations

REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x, y):
        return x @ y

M = 33
K = 2 * 16
N = M + 7
flag = True

def get_inputs():
    a = torch.randn(M, K)
    return [a, torch.rand((K, N)).cuda()]

def get_init_inputs():
    return []
"""


def test_constants_and_shapes_come_from_the_syntax_tree(tmp_path):
    path = tmp_path / "level2" / "7_matmul.py"
    path.parent.mkdir()
    path.write_text(REF)
    p = load_problem(path)
    assert p.constants == {"M": 33, "K": 32, "N": 40}
    assert p.input_shapes == [[33, 32], [32, 40]]
    assert p.level == 2
    assert p.size_constants() == {"M": 33, "K": 32, "N": 40}


def test_syntax_error_names_file_and_line(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("import torch\n\nclass Model(:\n    pass\n")
    with pytest.raises(ProblemError, match=r"bad\.py:3"):
        load_problem(path)


def test_missing_definitions_are_named(tmp_path):
    path = tmp_path / "nomodel.py"
    path.write_text("def get_inputs():\n    return []\n")
    with pytest.raises(ProblemError, match="`Model`.*`get_init_inputs`"):
        load_problem(path)


def test_perturbations_change_every_size_and_stay_positive(tmp_path):
    path = tmp_path / "p.py"
    path.write_text(REF)
    sets = perturbations(load_problem(path))
    assert sets, "a problem with size constants must get perturbed sizes"
    for sizes in sets:
        assert set(sizes) == {"M", "K", "N"}
        assert all(v >= 1 for v in sizes.values())
        assert sizes != {"M": 33, "K": 32, "N": 40}
    assert all(v % 2 == 1 for v in sets[0].values()), "the first set is odd, to break power-of-two assumptions"


def test_list_problems_reports_unparseable_files_instead_of_failing(tmp_path):
    (tmp_path / "level1").mkdir()
    (tmp_path / "level1" / "1_ok.py").write_text(REF)
    (tmp_path / "level1" / "2_bad.py").write_text("def (")
    found = {p["name"]: p for p in list_problems(tmp_path)}
    assert found["1_ok"]["level"] == 1 and found["1_ok"]["input_shapes"] == [[33, 32], [32, 40]]
    assert "error" in found["2_bad"] and "2_bad.py:1" in found["2_bad"]["error"]
