"""Which aten ops a recorder or an ablation treats as structural (views, copies,
factories) and how tensors are told apart by their storage."""

from __future__ import annotations

import torch

_STRUCTURAL = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
    "full_like", "new_empty", "new_zeros", "new_ones", "new_full", "new_empty_strided", "fill_",
    "zero_", "copy_", "to", "_to_copy", "clone", "contiguous", "view", "_unsafe_view", "reshape",
    "_reshape_alias", "as_strided", "expand", "expand_as", "permute", "transpose", "t", "unsqueeze",
    "squeeze", "flatten", "unflatten", "slice", "select", "detach", "alias", "lift_fresh",
    "resolve_conj", "resolve_neg", "_local_scalar_dense", "item", "split", "split_with_sizes",
    "chunk", "narrow", "unbind", "view_as", "set_", "resize_", "is_nonzero", "numel", "size",
    "stride", "sym_size", "sym_stride", "sym_numel", "dim", "is_same_size", "_has_compatible_shallow_copy_type",
    "record_stream", "_pin_memory", "pin_memory", "cat", "stack", "arange", "scalar_tensor",
    "lift_fresh_copy", "_copy_from", "_copy_from_and_resize", "as_strided_",
}


_FRESH = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"}
_MADE = _FRESH | {"zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "new_zeros", "new_ones",
                  "new_full"}


def _storage(t: torch.Tensor) -> int:
    try:
        return t.untyped_storage().data_ptr()
    except Exception:  # tensors without storage (subclasses): their own address
        return id(t)
