"""Work done once in the warm runner so that no child pays for it: lazy
imports that torch and triton make on first use, and (on the CPU) the cache
flush's buffers and one interpreted Triton launch; for a runner that compiles baselines again and again,
torch.compile's first-use costs (``prewarm_compile``)."""

from __future__ import annotations

import os
import sys


def prewarm(device: str) -> None:
    import torch.fx  # noqa: F401
    import torch.fx.passes.shape_prop  # noqa: F401
    import torch.profiler  # noqa: F401
    import torch.utils.cpp_extension  # noqa: F401
    import triton
    import triton.language as tl

    from ..guards.launches import LaunchCounter
    from ..guards.recorder import OpRecorder

    with OpRecorder(LaunchCounter()):
        torch.ones(4).add(1)
    if device != "cpu":
        return  # CUDA must not be initialised before the fork
    from ..measure.timing import flush_buffers, flush_bytes

    flush_buffers(flush_bytes())  # the cache flush's buffers, inherited filled by every job

    @triton.jit
    def _double(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)

    _double[(1,)](torch.ones(8), 8, BLOCK=8)


def no_precompiled_headers() -> None:
    """Inductor without precompiled C++ headers, as every job compiles (zygote._child)."""
    os.environ["TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS"] = "0"
    config = sys.modules.get("torch._inductor.config")
    if config is not None:
        config.cpp_cache_precompile_headers = False


def prewarm_compile(scratch_root: str) -> dict[str, object]:
    """torch.compile's first-use costs, paid once here instead of in every reference
    job that compiles a baseline: dynamo's and inductor's imports (~3 s), inductor's
    vector-ISA probe (it builds and loads a few C++ programs, ~1.5 s, remembered in
    memory) and the lazy set-up of a first compile. A job forked afterwards compiles a
    reference whose kernels its packed cache holds in ~0.1 s instead of 2-5 s
    (docs/benchmarks/history/2026-12-02.md). CPU runners only: inductor must not touch CUDA before the fork.

    The warm-up compiles a matrix product (an extern kernel: no C++ to build) in a cache
    directory of its own under the scratch root (in a container the one place the runner
    may write), removed after; with one compile thread, so no compile worker is
    started, and without tqdm's monitor thread -- the runner forks every job and must hold
    no process a child could reach and no thread that could hold a lock at the fork.
    Returns what it cost and what the runner holds after."""
    import shutil
    import tempfile
    import time

    import torch

    started, threads_before = time.monotonic(), len(os.listdir("/proc/self/task"))
    import torch._dynamo
    import torch._inductor.config as config
    from torch._inductor.cpu_vec_isa import pick_vec_isa

    try:  # inductor's progress bars would start tqdm's monitor thread, which every fork would lack
        import tqdm

        tqdm.tqdm.monitor_interval = 0
    except ImportError:
        pass
    root = tempfile.mkdtemp(prefix="kforge-warm-", dir=scratch_root)
    saved_dir, saved_threads = os.environ.get("TORCHINDUCTOR_CACHE_DIR"), config.compile_threads
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = root
    no_precompiled_headers()
    config.compile_threads = 1
    try:
        pick_vec_isa()

        def _product(a: torch.Tensor) -> torch.Tensor:
            return a @ a

        torch.compile(_product)(torch.ones(4, 4))
        torch._dynamo.reset()
    finally:
        config.compile_threads = saved_threads
        if saved_dir is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = saved_dir
        shutil.rmtree(root, ignore_errors=True)
    return {"seconds": round(time.monotonic() - started, 2), "threads_before": threads_before,
            "threads": len(os.listdir("/proc/self/task")), "children": _children()}


def _children() -> int:
    try:
        with open(f"/proc/self/task/{os.getpid()}/children") as f:
            return len(f.read().split())
    except OSError:
        return -1
