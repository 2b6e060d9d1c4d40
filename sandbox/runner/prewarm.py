"""Work done once in the warm runner so that no child pays for it: lazy
imports that torch and triton make on first use, and (on the CPU) one
interpreted Triton launch."""

from __future__ import annotations


def prewarm(device: str) -> None:
    import torch.fx  # noqa: F401
    import torch.fx.passes.shape_prop  # noqa: F401
    import torch.profiler  # noqa: F401
    import torch.utils.cpp_extension  # noqa: F401
    import triton
    import triton.language as tl

    from .guards.launches import LaunchCounter
    from .guards.recorder import OpRecorder

    with OpRecorder(LaunchCounter()):
        torch.ones(4).add(1)
    if device != "cpu":
        return  # CUDA must not be initialised before the fork

    @triton.jit
    def _double(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)

    _double[(1,)](torch.ones(8), 8, BLOCK=8)
