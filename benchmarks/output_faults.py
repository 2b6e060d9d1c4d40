"""Page faults a call when each output is released before the next call (as the judge's
timed calls do) against kept until the next call returns (as a user's ``out = model(x)``
loop does): a batch problem folder's reference (``--party ref``) or best kernel
(``--party cand``), called 8 times in this process, no judge. ``--steady`` first fixes
glibc's thresholds (mallopt M_MMAP_THRESHOLD 32 MiB, M_TRIM_THRESHOLD 2 GiB).

    .venv/bin/python benchmarks/output_faults.py OUT/problems/level1/41_* --party cand [--steady]

Runs the kernel unsandboxed: only for code you have read. Prints two lines of fault counts.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import resource
import sys
from pathlib import Path
from types import ModuleType

import torch


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def faults() -> int:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_minflt + u.ru_majflt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("problem", type=Path, help="a problem folder of a batch run (reference.py, s0/best.py)")
    ap.add_argument("--party", choices=("ref", "cand"), default="cand")
    ap.add_argument("--steady", action="store_true")
    ap.add_argument("--calls", type=int, default=8)
    args = ap.parse_args()
    if args.steady:
        libc = ctypes.CDLL(None)
        assert libc.mallopt(-3, 32 << 20) == 1 and libc.mallopt(-1, (1 << 31) - 1) == 1
    ref = load(args.problem / "reference.py", "reference")
    torch.manual_seed(0)
    init = ref.get_init_inputs()
    model = load(args.problem / "s0" / "best.py", "best").ModelNew(*init) if args.party == "cand" else ref.Model(*init)
    x = ref.get_inputs()
    with torch.no_grad():
        released = []
        for _ in range(args.calls):
            f0 = faults()
            out = model(*x)
            released.append(faults() - f0)
            del out
        kept, out = [], None
        for _ in range(args.calls):
            f0 = faults()
            new = model(*x)
            kept.append(faults() - f0)
            out = new  # noqa: F841  (the previous output lives until the next call has returned)
    print(args.party, "released before the next call:", released)
    print(args.party, "kept until the next call returns:", kept)


if __name__ == "__main__":
    main()
