"""The kernel backends a search can write, and the device each one implies.

triton and cuda target GPUs (without one, Triton runs in its interpreter: correct,
not timed); cpu writes C/C++ built by the system compiler and runs on the CPU,
where the judge times it for real. One list, read by the CLI, the REST schema,
the dashboard's filters and the MCP tools.
"""

from __future__ import annotations

from typing import Literal, get_args

from .errors import BadRequest

Backend = Literal["triton", "cuda", "cpu"]
BACKENDS: tuple[str, ...] = get_args(Backend)


class BackendError(BadRequest, ValueError):
    """A backend / device combination that cannot run; the message names the flags."""


def check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise BackendError(f"--backend {backend!r}: use {', '.join(BACKENDS[:-1])} or {BACKENDS[-1]}")
    return backend


def device_for(backend: str, device: str | None) -> str | None:
    """The judge's device for ``backend``: cpu implies the CPU (asking for cuda
    with it is an error); the GPU backends keep the device asked for."""
    check_backend(backend)
    if backend != "cpu":
        return device
    if device not in (None, "auto", "cpu"):
        raise BackendError(f"--backend cpu runs on the CPU: --device {device} does not go with it (use auto or cpu)")
    return "cpu"


def timed_for_real(backend: str | None, device: str | None) -> bool:
    """Whether the judge measures speedups for this combination: on a GPU, or
    native C on the CPU (Triton on the CPU runs in its interpreter: not timed)."""
    return device == "cuda" or (backend == "cpu" and device in (None, "cpu"))
