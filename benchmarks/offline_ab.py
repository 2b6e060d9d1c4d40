"""Time every cpu-backend proposal of the offline engine for one reference against eager,
in this process (the engine's own C kernels and a trusted reference: never a user's file),
with the reference's module-level sizes overridden on the command line:

    T=1 OMP_NUM_THREADS=1 .venv/bin/python benchmarks/offline_ab.py \\
        /tmp/KernelBench/KernelBench/level1/54_conv_standard_3D__square_input__square_kernel.py \\
        batch_size=2 depth=16 width=24 height=20

Prints eager's median of 20 calls, then each proposal's median, its speedup and max error.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import torch  # noqa: E402

from tests.agents.offline.cpu_harness import cpu_proposals, load_source  # noqa: E402


def median_seconds(fn, args, n: int = 20) -> float:
    fn(*args), fn(*args)
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return sorted(times)[n // 2]


def main() -> None:
    torch.set_num_threads(int(os.environ.get("T", "2")))
    src = Path(sys.argv[1]).read_text()
    for k, v in (a.split("=", 1) for a in sys.argv[2:]):
        src = re.sub(rf"^{k} = .*$", f"{k} = {v}", src, flags=re.M)
    proposals = cpu_proposals(src, 8)
    ref = load_source(src, "ab_reference")
    torch.manual_seed(0)
    init = ref.get_init_inputs()
    model, inputs = ref.Model(*init), ref.get_inputs()
    with torch.no_grad():
        eager = median_seconds(model, inputs)
        print(f"eager {eager * 1e3:.3f} ms", [tuple(x.shape) for x in inputs])
        for i, p in enumerate(proposals):
            new = load_source(p.source, f"ab_candidate{i}").ModelNew(*init)
            new.load_state_dict(model.state_dict())
            err = (new(*inputs) - model(*inputs)).abs().max().item()
            t = median_seconds(new, inputs)
            print(f"{i} {p.note[:70]!r}: {t * 1e3:.3f} ms  {eager / t:.2f}x  err {err:.1e}")


if __name__ == "__main__":
    main()
