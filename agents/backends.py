"""The kernel backends, listed once for the whole house: what each writes, where its
kernels run and which template set of the offline engine serves it. app/backends.py
(the requests' choices, ``auto``), the search's config and the engine's templates all
read this list."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BackendSpec:
    name: str
    language: str   # what a candidate's kernels are written in
    device: str     # where they run: "gpu" or "cpu"
    templates: str  # the offline engine's template set: "triton" (templates/) or "cpu" (templates/cpu/)


BACKENDS: dict[str, BackendSpec] = {s.name: s for s in (
    BackendSpec("triton", "Triton", "gpu", "triton"),
    BackendSpec("cuda", "CUDA C++ (load_inline)", "gpu", "triton"),
    BackendSpec("cpu", "C / C++ with OpenMP and SIMD (kforge_native)", "cpu", "cpu"),
)}
NAMES: tuple[str, ...] = tuple(BACKENDS)


def check(name: str) -> BackendSpec:
    """The backend called ``name``; ValueError naming the others when there is none."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}: one of {', '.join(NAMES)}")
    return BACKENDS[name]
