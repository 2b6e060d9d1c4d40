"""Large intermediate tensors kept for a candidate's next call: ``kforge_native.scratch``.

A fresh tensor's pages are faulted in on first touch: on the machines here a
48 MB activation costs ~12,000 page faults, ~15 ms, where writing over memory
already mapped costs 2-3 ms. glibc serves tensors below its mmap threshold
(at most 32 MiB) from memory it keeps, but maps every larger one afresh and
unmaps it on free -- so a whole model pays its large activations' faults on
every call (eager PyTorch and torch.compile too; a GPU's caching allocator is
what spares them there).

A composed candidate (agents/offline/templates/compose.py) hands each dead
intermediate to ``give`` where it would delete it, and its kernels' hosts
allocate through ``empty``: a tensor of the same dtype and size given back
earlier (in this call or the last one) is handed out again, uninitialised as
``torch.empty``'s. ``give`` keeps a tensor only when nothing else can reach its
memory: contiguous over its whole storage, no other tensor on that storage
(no view, no alias), no other Python reference than the caller's name. A
forward's result is never given (it is returned, not deleted), so no tensor a
caller holds is ever written again. At most ``MAX_BYTES`` kept, only tensors
of ``MIN_BYTES`` or more (the smaller ones glibc already reuses).

Standard library and torch only: this module runs inside the sandbox.
"""

from __future__ import annotations

import sys
from typing import Any

import torch

MIN_BYTES = 32 << 20   # glibc's largest mmap threshold: anything smaller it serves from memory it keeps
MAX_BYTES = 1 << 30    # kept at most
PER_SIZE = 4           # tensors kept per (dtype, size) at most

_use_count = torch._C._storage_Use_Count  # bound at import, before any candidate code runs


class Scratch(dict):
    """The pool: (dtype, numel) -> the kept tensors of that size. A dict of lists of tensors,
    so that the judge's walk of what a candidate's globals hold (provenance.reachable_tensors)
    finds every kept buffer: state kept across calls, canary-filled before each native call
    of a correctness trial like any other (provenance.Provenance.native_call). ``list.pop``
    and ``append`` are atomic: two threads never take the same buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes = 0

    def empty(self, *shape: Any, dtype: torch.dtype = torch.float32, device: Any = "cpu") -> torch.Tensor:
        """A contiguous tensor of ``shape`` (ints, or one sequence of them), uninitialised."""
        dims = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else tuple(shape)
        numel = 1
        for d in dims:
            numel *= int(d)
        if torch.device(device).type == "cpu" and numel * dtype.itemsize >= MIN_BYTES:
            kept = self.get((dtype, numel))
            try:
                t = kept.pop() if kept else None
            except IndexError:  # another thread took the last one
                t = None
            if t is not None:
                self.bytes -= t.nbytes
                # not a view of the kept tensor (a view holds its base): its storage alone
                return torch.empty(0, dtype=dtype).set_(t.untyped_storage(), 0, dims)
        return torch.empty(dims, dtype=dtype, device=device)

    def give(self, t: Any) -> None:
        """Keep ``t`` for a later ``empty`` if nothing but the caller's one name reaches its
        memory (the caller deletes that name right after)."""
        # the caller's name, this frame's parameter and getrefcount's argument: 3
        if not isinstance(t, torch.Tensor) or type(t) is not torch.Tensor or sys.getrefcount(t) > 3:
            return
        if t.device.type != "cpu" or t.requires_grad or t.nbytes < MIN_BYTES or not t.is_contiguous():
            return
        storage = t.untyped_storage()
        # two holders of the storage: t itself and the Python storage object just made (a
        # view's base would be a third)
        if t.storage_offset() != 0 or storage.nbytes() != t.nbytes or _use_count(storage._cdata) != 2:
            return
        same = self.setdefault((t.dtype, t.numel()), [])
        if len(same) >= PER_SIZE or self.bytes + t.nbytes > MAX_BYTES:
            return
        same.append(t)
        self.bytes += t.nbytes


scratch = Scratch()
