"""The kernel backends a search can write, the device each one implies, and
`auto`, the default of every entry point, resolved here and only here.

triton and cuda target GPUs (without one, Triton runs in its interpreter: correct,
not timed); cpu writes C/C++ built by the system compiler and runs on the CPU,
where the judge times it for real. `auto` picks triton where a GPU is visible and
cpu where none is, so a CPU-only machine measures real speedups by default. The
list is agents/backends.py's (the search and the engine's templates read it too);
here it becomes the choices of the CLI, the REST schema, the dashboard and the MCP tools; the
choice is made by `resolve_backend`, which app.compose.choose_backend calls for
every entry point (the worker for REST, dashboard and MCP jobs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Literal, get_args

from agents import backends as registry

from .errors import BadRequest

# The list is agents/backends.py's; the Literals give the REST schema its enums.
Backend = Literal[registry.NAMES]  # type: ignore[valid-type]  # a kernel language: what a search writes
BACKENDS: tuple[str, ...] = get_args(Backend)
BackendChoice = Literal[("auto", *registry.NAMES)]  # type: ignore[valid-type]  # what a request may ask for
CHOICES: tuple[str, ...] = get_args(BackendChoice)
AUTO_GPU_BACKEND = "triton"

# The name of the GPU the judge would time on, or None when none is visible.
GpuProbe = Callable[[], "str | None"]


class BackendError(BadRequest, ValueError):
    """A backend / device combination that cannot run; the message names the flags."""


def backend_list() -> dict[str, list]:
    """The backends (name, language, device) and the choices a request may make, for the API."""
    return {"backends": [{"name": s.name, "language": s.language, "device": s.device}
                         for s in registry.BACKENDS.values()], "choices": list(CHOICES)}


def check_backend(backend: str, *, allow_auto: bool = True) -> str:
    allowed = CHOICES if allow_auto else BACKENDS
    if backend not in allowed:
        raise BackendError(f"--backend {backend!r}: use {', '.join(allowed[:-1])} or {allowed[-1]}")
    return backend


def device_for(backend: str, device: str | None) -> str | None:
    """The judge's device for ``backend``: cpu implies the CPU (asking for cuda
    with it is an error); the GPU backends and auto keep the device asked for."""
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


def visible_gpu() -> str | None:
    """The first CUDA device's name as torch sees it (the judge's own test), else None."""
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


@dataclass(frozen=True)
class ChosenBackend:
    """What ran and why: ``reason`` reads "auto: no GPU found -> cpu"; ``device_name``
    is the CPU model and threads or the GPU's name (what the timings are labelled with)."""

    requested: str
    backend: str
    device: str | None
    device_kind: str        # "cpu" | "gpu": what the judge will run on
    device_name: str
    reason: str
    timed: bool             # whether speedups are measured (not Triton's interpreter)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def resolve_backend(requested: str, device: str | None, probe: GpuProbe, cpu_name: Callable[[], str]) -> ChosenBackend:
    """The backend and device a request runs with. An explicit backend is always
    honoured; auto follows an explicit device, else the probe: a GPU -> triton,
    none -> cpu (native C, timed for real)."""
    device = device_for(requested, device)
    gpu = None if device == "cpu" else probe()
    if requested != "auto":
        backend, reason = requested, f"{requested}: asked for"
    elif device == "cpu":
        backend, reason = "cpu", "auto: device cpu asked for -> cpu"
    elif device == "cuda":
        backend, reason = AUTO_GPU_BACKEND, f"auto: device cuda asked for -> {AUTO_GPU_BACKEND}"
    elif gpu:
        backend, reason = AUTO_GPU_BACKEND, f"auto: GPU found ({gpu}) -> {AUTO_GPU_BACKEND}"
    else:
        backend, reason = "cpu", "auto: no GPU found -> cpu"
    device = device_for(backend, device)
    on_gpu = device == "cuda" or (device != "cpu" and gpu is not None)
    timed = on_gpu or backend == "cpu"
    if not timed:
        reason += " (no GPU: Triton runs in its interpreter, correctness only)"
    return ChosenBackend(requested=requested, backend=backend, device=device,
                             device_kind="gpu" if on_gpu else "cpu",
                             device_name=(gpu or "CUDA device") if on_gpu else cpu_name(), reason=reason, timed=timed)
