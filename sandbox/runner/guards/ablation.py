"""One forward call with the custom kernels taken out (see Ablation)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .ops import _FRESH, _MADE, _STRUCTURAL, _storage


def poison(value: Any) -> None:
    """Overwrite a tensor with values no kernel would compute (NaN, or a huge int)."""
    if isinstance(value, torch.Tensor) and value.numel():
        if value.dtype.is_floating_point or value.dtype.is_complex:
            value.fill_(float("nan"))
        elif value.dtype == torch.bool:
            value.fill_(True)
        else:
            value.fill_(torch.iinfo(value.dtype).max if value.dtype != torch.uint8 else 251)
    elif isinstance(value, (tuple, list)):
        for v in value:
            poison(v)


class Ablation(TorchDispatchMode):
    """One forward call with the custom kernels taken out.

    Triton launches are skipped and their scratch buffers poisoned; a
    compiled-extension function runs, then what it returns is poisoned (if it
    returns nothing, its scratch arguments are). Scratch means: not an input,
    parameter or buffer of the model, and not a result torch computed during
    this call -- so an output buffer kept from an earlier call cannot pass for
    this call's result. Fresh allocations (``torch.empty`` and friends) are
    poisoned as they are made, so memory that still holds an earlier result
    cannot either."""

    def __init__(self, keep: list[Any]) -> None:
        super().__init__()
        self.skipped = 0
        self._keep = {_storage(t) for t in keep if isinstance(t, torch.Tensor)}
        self._made: set[int] = set()  # factory results of this call
        self._computed: set[int] = set()  # other op results of this call

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if isinstance(out, torch.Tensor):
            if name in _MADE:
                self._made.add(_storage(out))
                if name in _FRESH:
                    poison(out)
            elif name not in _STRUCTURAL:
                self._computed.add(_storage(out))
        return out

    def _scratch(self, values: list[Any]) -> list[torch.Tensor]:
        out = []
        for v in values:
            if isinstance(v, torch.Tensor):
                key = _storage(v)
                if key not in self._keep and (key in self._made or key not in self._computed):
                    out.append(v)
        return out

    def skip(self, args: list[Any]) -> None:
        self.skipped += 1
        for t in self._scratch(args):
            poison(t)

    def run_ext(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        self.skipped += 1
        out = fn(*args, **kwargs)
        poison(self._scratch(list(args) + list(kwargs.values())) if out is None else out)
        return out
