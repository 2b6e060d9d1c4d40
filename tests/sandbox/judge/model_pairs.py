"""Running a reference and a candidate side by side in this process (for the
direct sanity checks of the fixtures, not for judging)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import torch


@contextmanager
def sizes(module: ModuleType, constants: dict[str, int]) -> Iterator[None]:
    """Temporarily set a problem's module-level size constants."""
    saved = {k: getattr(module, k) for k in constants}
    vars(module).update(constants)
    try:
        yield
    finally:
        vars(module).update(saved)


def build_pair(reference: ModuleType, candidate: ModuleType, seed: int) -> tuple[Any, Any]:
    """Model and ModelNew built from the same seed and init inputs, the reference's
    weights copied wherever names and shapes agree (as the judge does)."""
    init = list(reference.get_init_inputs())
    torch.manual_seed(seed)
    ref = reference.Model(*init)
    torch.manual_seed(seed)
    cand = candidate.ModelNew(*init)
    own = cand.state_dict()
    matching = {k: v for k, v in ref.state_dict().items() if k in own and own[k].shape == v.shape}
    if matching:
        cand.load_state_dict(matching, strict=False)
    return ref, cand


def draw_inputs(reference: ModuleType, seed: int) -> list[Any]:
    torch.manual_seed(seed)
    return list(reference.get_inputs())


def expected_output(ref: Any, inputs: list[Any]) -> torch.Tensor:
    with torch.no_grad():
        return ref(*[t.clone() if isinstance(t, torch.Tensor) else t for t in inputs])


def close(got: Any, want: torch.Tensor, tol: float = 1e-4) -> bool:
    """Same type, shape, dtype and values within tolerance; NaN never matches."""
    return (
        type(got) is torch.Tensor
        and got.shape == want.shape
        and got.dtype == want.dtype
        and bool(torch.isfinite(got).all())
        and bool(torch.allclose(got, want, atol=tol, rtol=tol))
    )


def max_error(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got.double() - want.double()).abs().max())
