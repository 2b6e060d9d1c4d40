"""The C convolution kernels (implicit GEMM and direct, every parameter set) built with
AddressSanitizer and run on the layer cases: a write past a packed panel or an output is
an error here even where the plain build would only corrupt the heap unnoticed."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CHILD = """
import sys
import sandbox.runner.native.library as native
native.FLAGS = native.FLAGS + ("-fsanitize=address", "-fno-omit-frame-pointer")
from tests.agents.offline.cpu_harness import check, cpu_proposals
from tests.agents.offline.layer_cases import CONV
for name in sorted(CONV):
    for i, p in enumerate(cpu_proposals(CONV[name])):
        check(CONV[name], p.source, f"asan_{name}_{i}")
        print(name, i, flush=True)
"""


def _libasan() -> str:
    out = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    return out if os.path.isabs(out) and os.path.exists(out) else ""


@pytest.mark.skipif(sys.platform != "linux", reason="AddressSanitizer preloading is set up for Linux here")
def test_conv_kernels_stay_inside_their_buffers() -> None:
    libasan = _libasan()
    assert libasan, "gcc's libasan.so is missing (it ships with gcc on this machine)"
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "LD_PRELOAD": libasan, "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0",
               "KFORGE_NATIVE_CACHE": cache, "OMP_NUM_THREADS": "2"}
        proc = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=1200)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "AddressSanitizer" not in proc.stderr, proc.stderr[-4000:]
    assert len(proc.stdout.split("\n")) > 20, proc.stdout
