"""Static reading of problem files: no user code is imported."""

from __future__ import annotations

import pytest

from sandbox import ProblemError, list_problems, load_problem
from sandbox.judging.trial_plan import perturbations

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


LITERAL = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 10)

    def forward(self, x, idx):
        return self.fc(x) + idx.float().mean()


def get_inputs():
    return [torch.randn(24, 64), torch.randint(0, 1000, (24,))]  # é: offsets count bytes


def get_init_inputs():
    return [3]
'''


def test_literal_sizes_of_get_inputs_are_named_on_their_own_line(tmp_path):
    p = load_problem(tmp_path / "lit.py", LITERAL)
    assert p.size_constants() == {}
    assert p.literal_dims == {"_kforge_dim0": 24, "_kforge_dim1": 64, "_kforge_dim2": 24}
    before, after = LITERAL.splitlines(), p.run_source.splitlines()
    assert len(before) == len(after)
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    assert changed == [14]  # only the return line of get_inputs; 1000 is randint's bound, not a size
    assert after[14] == ("    return [torch.randn(_kforge_dim0, _kforge_dim1), torch.randint(0, 1000, (_kforge_dim2,))]"
                         "  # é: offsets count bytes")
    # The batch can shrink on its own although the feature size is tied to nn.Linear(64, ...).
    sets = perturbations(p)
    assert sets[0] == {"_kforge_dim0": 19, "_kforge_dim1": 49, "_kforge_dim2": 19}
    assert sets[1] == {"_kforge_dim0": 30, "_kforge_dim1": 80, "_kforge_dim2": 30}  # grown
    assert {"_kforge_dim0": 19} in sets and {"_kforge_dim0": 30} in sets and len(sets) == 6


def test_a_problem_with_module_sizes_runs_as_written(tmp_path):
    src = LITERAL.replace("torch.randn(24, 64)", "torch.randn(batch, 64)") + "\nbatch = 24\n"
    p = load_problem(tmp_path / "mod.py", src)
    assert p.run_source == src and p.literal_dims == {}


LARGE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

M = {M}
N = {N}

def get_inputs():
    return [torch.rand(M, N)]

def get_init_inputs():
    return []
"""


def test_a_large_problem_gets_fewer_trials_and_grows_one_size(tmp_path):
    """One call of 1024 x 114688 fp32 (470 MB): every trial's tensors travel to
    the judge and back, so the plan keeps 3 default trials and grows one size."""
    from sandbox import EvalOptions
    from sandbox.judging.trial_plan import LARGE_TRIALS, plan_trials

    path = tmp_path / "big.py"
    path.write_text(LARGE.format(M=1024, N=114688))
    plan = plan_trials(load_problem(path), EvalOptions(trials=5))
    assert sum(p["tag"] == "default" for p in plan) == LARGE_TRIALS == 2
    perturbed = [p["constants"] for p in plan if p["tag"] == "perturbed"]
    grown = [c for c in perturbed if any(v > {"M": 1024, "N": 114688}[k] for k, v in c.items())]
    assert grown == [{"M": 1280}], perturbed
    assert not any(p.get("if_large") or p.get("unless_large") for p in plan)
    small = tmp_path / "small.py"
    small.write_text(LARGE.format(M=64, N=32))
    plan = plan_trials(load_problem(small), EvalOptions(trials=5))
    # small by its inputs: five default trials, the last three only if its first trial is small too
    assert [bool(p.get("unless_large")) for p in plan if p["tag"] == "default"] == [False, False, True, True, True]
    kinds = [(p["constants"], "if_large" if p.get("if_large") else "unless_large" if p.get("unless_large") else "")
             for p in plan if p["tag"] == "perturbed"]
    assert kinds == [({"M": 49, "N": 25}, ""), ({"M": 48, "N": 24}, "unless_large"),
                     ({"M": 80, "N": 40}, "unless_large"), ({"M": 80}, "if_large")], kinds


DERIVED = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, bias_shape):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(bias_shape))
    def forward(self, x):
        return x + self.bias

batch_size = 16
depth, channels = 12, 32
bias_shape = (channels, 1, 1)
widths = [channels * 2, 3]
kernel = (3, 3)
label = f"{channels}"

def get_inputs():
    return [torch.randn(batch_size, channels, depth, depth)]

def get_init_inputs():
    return [bias_shape]
"""


def test_values_computed_from_sizes_follow_them_in_the_perturbed_trials(tmp_path):
    """``bias_shape = (channels, 1, 1)`` follows the perturbed channel count (as in
    a fitted reference), tuples stay tuples, what cannot be read keeps its default;
    the sizes alone are tried too, except on a large problem."""
    from sandbox import EvalOptions
    from sandbox.judging.trial_plan import plan_trials
    from sandbox.problem import derived_values

    path = tmp_path / "derived.py"
    path.write_text(DERIVED)
    problem = load_problem(path)
    assert derived_values(problem, {"channels": 20}) == {"bias_shape": (20, 1, 1), "widths": [40, 3]}
    assert derived_values(problem, {"batch_size": 9}) == {}
    planned = [p for p in plan_trials(problem, EvalOptions()) if p["tag"] == "perturbed"]
    # what a problem found large by its first trial runs instead: the sizes grown one at a time
    assert [p["constants"] for p in planned if p.get("if_large")] == [{"batch_size": 20}]
    trials = [p for p in planned if not p.get("if_large")]
    perturbed = [p["constants"] for p in trials]
    # the sizes alone only stand in for a set the reference could not run
    assert [bool(p.get("fallback")) for p in trials] == [False, True] * (len(trials) // 2)
    assert all(p.get("unless_large") for p in trials if p.get("fallback"))
    sets = perturbations(problem)
    assert perturbed[0] == {**sets[0], "bias_shape": (sets[0]["channels"], 1, 1),
                            "widths": [sets[0]["channels"] * 2, 3]}
    assert perturbed[1] == sets[0] and len(perturbed) == 2 * len(sets)
    assert all(isinstance(c["bias_shape"], tuple) for c in perturbed[::2])
