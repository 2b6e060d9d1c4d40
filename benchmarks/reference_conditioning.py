"""How far a reference's own float32 output is from its float64 output on the same inputs and
weights: where that distance is past the judge's tolerance, no kernel with another summation
order can pass (docs/benchmarks/history/2026-12-02.md, level 3: EfficientNetB2, UNetSoftmax).

    .venv/bin/python benchmarks/reference_conditioning.py PROBLEM.py   # e.g. a --fit-memory run's reference.py
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sandbox.verdict.compare import Conditioning  # noqa: E402


def main(path: str) -> None:
    spec = importlib.util.spec_from_file_location("reference", path)
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    torch.manual_seed(0)
    model = ref.Model(*ref.get_init_inputs())
    torch.manual_seed(1)
    inputs = ref.get_inputs()
    with torch.no_grad():
        out32 = model(*inputs)
        out64 = model.double()(*[t.double() if isinstance(t, torch.Tensor) else t for t in inputs])
    cond = Conditioning.of(out32, out64)
    print(f"max |fp32 - fp64| {cond.worst:.6g} (rms {cond.rms:.6g}), output scale (max |fp64|) {cond.top:.6g} "
          f"(rms {cond.size:.6g}): " + (cond.describe() if cond.ill else "well-conditioned at the judge's cap"))


if __name__ == "__main__":
    main(sys.argv[1])
