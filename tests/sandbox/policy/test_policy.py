"""The judge's static rules over a candidate's source (sandbox/policy/python.py).

Every honest kernel in the repo (fixtures, the bundled suite's correct
solutions, the offline engine's templates as rendered in its tests) must read
clean; each construct that reaches the judge's in-process observers must be
named with its line.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from sandbox.policy import python as policy

REPO = Path(__file__).resolve().parents[3]
HONEST = sorted((REPO / "tests/fixtures/judge/honest").glob("*.py")) + sorted(
    (REPO / "problems").glob("level*/solutions/*/correct_*.py"))


@pytest.mark.parametrize("path", HONEST, ids=lambda p: str(p.relative_to(REPO)))
def test_honest_kernels_read_clean(path: Path) -> None:
    assert policy.findings(path.read_text(encoding="utf-8"), path.name) == []


def found(source: str) -> list[str]:
    return policy.findings(textwrap.dedent(source), "cand.py")


@pytest.mark.parametrize("source, expected", [
    ("import gc\n", "cand.py:1: imports gc"),
    ("import inspect as i\n", "imports inspect"),
    ("from ctypes import CDLL\n", "imports ctypes"),
    ("import importlib\n", "imports importlib"),
    ("import threading\n", "imports threading"),
    ("from concurrent.futures import ThreadPoolExecutor\n", "imports concurrent.futures"),
    ("import sandbox.runner.phases.harness\n", "imports the judge's own code"),
    ("from torch.utils._python_dispatch import _disable_current_modes\n", "manipulates torch's dispatch modes"),
    ("import torch\nwith torch._C._DisableTorchDispatch():\n    pass\n", "cand.py:2: uses ._DisableTorchDispatch"),
    ("import sys\nf = sys._getframe(1)\n", "cand.py:2: uses ._getframe"),
    ("def f(fr):\n    return fr.f_back.f_locals\n", "uses .f_locals"),
    ("import sys\nm = sys.modules['torch']\n", "uses .modules"),
    ("import os\nos._exit(0)\n", "uses ._exit"),
    ("import os\npid = os.fork()\n", "uses os.fork"),
    ("from os import fork\n", "imports os.fork"),
    ("import torch\ntorch.allclose = lambda *a, **k: True\n", "assigns torch.allclose"),
    ("import time as t\nt.perf_counter = lambda: 0.0\n", "assigns time.perf_counter"),
    ("import torch.nn.functional as F\nF.relu = None\n", "assigns torch.nn.functional.relu"),
    ("import torch\nsetattr(torch, 'equal', None)\n", "setattr() on module torch"),
    ("import torch\nop = getattr(torch, 're' + 'lu')\n", "getattr() with a computed name on module torch"),
    ("x = getattr(object, '__subclasses__')\n", "getattr(..., '__subclasses__')"),
    ("x = ().__class__.__base__.__subclasses__()\n", "uses .__subclasses__"),
    ("exec('import gc')\n", "uses exec()"),
    ("f = __import__\n", "uses __import__()"),
    ("g = globals()\n", "uses globals()"),
    ("b = __builtins__\n", "uses __builtins__"),
    ("import torch\nm = torch.compile(object())\n", "uses .compile: hands the computation to torch's compiler"),
    ("src = '''\n#include <torch/extension.h>\ntorch::Tensor f(torch::Tensor x) { return at::native::relu(x); }\n'''\n",
     "cand.py:3: C++ source uses at::native::"),
    ("src = '''\n#include <torch/extension.h>\n"
     "void f() { c10::impl::ExcludeDispatchKeyGuard g(c10::DispatchKey::Python); }\n'''\n",
     "switches off torch's dispatch keys"),
    ("src = '''\n#include <Python.h>\nvoid f() { PyRun_SimpleString(\"import gc\"); }\n'''\n",
     "reaches into the Python interpreter"),
])
def test_each_route_to_the_observers_is_named(source: str, expected: str) -> None:
    hits = found(source)
    assert any(expected in h for h in hits), hits


def test_what_kernels_do_reads_clean() -> None:
    source = """
        import math
        import os
        import re
        import torch
        import torch.nn as nn
        import triton
        import triton.language as tl

        torch.backends.cuda.matmul.allow_tf32 = False
        DEBUG = os.environ.get("KERNEL_DEBUG", "0") == "1"
        PATTERN = re.compile(r"\\d+")

        class ModelNew(nn.Module):
            def __init__(self, vars: int = 3) -> None:
                super().__init__()
                self.vars = vars
                self.scale = getattr(self, "scale_default", 1.0)

            def forward(self, x):
                for m in self.modules():
                    pass
                return x.__class__.__name__ and x

        if __name__ == "__main__":
            import time, gc
            time.perf_counter = None
            exec("print(1)")
        """
    assert found(source) == []


def test_unparsable_source_is_left_to_the_compile_check() -> None:
    assert found("def broken(:\n") == []


@pytest.mark.parametrize("source, expected", [
    ("import os\nfds = os.listdir('/proc/self/fd')\n", "names '/proc/self/fd'"),
    ("import os\nos.write(7, b'frame')\n", "uses os.write"),
    ("f = open(7, 'wb')\n", "opens a computed path or a file descriptor"),
])
def test_writing_to_the_result_channel_directly_is_named(source: str, expected: str) -> None:
    hits = found(source)
    assert any(expected in h for h in hits), hits


def test_computed_names_on_triton_modules_are_fine() -> None:
    source = """
        import torch
        import triton.language as tl

        def tl_dtype(t: torch.Tensor):
            return getattr(tl, str(t.dtype).split(".")[-1])
        """
    assert found(source) == []
