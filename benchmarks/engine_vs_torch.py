"""A KernelBench problem fitted to a budget, the offline engine's first C proposals timed
beside eager and torch.compile in this process (median of 20 calls after 3 warm-up calls,
no judge): the quick before/after of a template change. The reference runs in this
process: use it on KernelBench or the repo's problems only.

    .venv/bin/python benchmarks/engine_vs_torch.py /tmp/KernelBench/KernelBench 'level2/93_*' 4
"""
import glob
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from app.batch.fit import fit_problem  # noqa: E402
from tests.agents.offline.cpu_harness import analyse, cpu_proposals, load_source  # noqa: E402


def median_ms(f, args, reps=20):
    with torch.no_grad():
        for _ in range(3):
            f(*args)
        ts = []
        for _ in range(reps):
            t = time.perf_counter()
            f(*args)
            ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2] * 1e3


def main() -> None:
    root, pattern = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    path = glob.glob(f"{root}/{pattern}")[0]
    fit = fit_problem(path, 0.05, analyse)
    print(path, fit.sizes)
    ref = load_source(fit.source, "ref_p")
    torch.manual_seed(0)
    init = list(ref.get_init_inputs())
    model = ref.Model(*init)
    inputs = list(ref.get_inputs())
    with torch.no_grad():
        want = model(*inputs)
    eager, compiled = median_ms(model, inputs), median_ms(torch.compile(model), inputs)
    print(f"eager {eager:.3f} ms  compile {compiled:.3f} ms")
    for i, p in enumerate(cpu_proposals(fit.source, n)):
        cand = load_source(p.source, f"cand_{i}")
        new = cand.ModelNew(*init)
        new.load_state_dict(model.state_dict(), strict=False)
        with torch.no_grad():
            err = float((new(*inputs) - want).abs().max())
        t = median_ms(new, inputs)
        print(f"{i} {p.family} {p.params}: {t:.3f} ms  {eager / t:.2f}x eager  {compiled / t:.2f}x compile  "
              f"max err {err:.1e}")


if __name__ == "__main__":
    main()
