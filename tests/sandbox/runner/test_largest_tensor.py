"""What the fit calls the largest tensor forward makes (sandbox/runner/phases/analyze.py,
``Largest``): an op's new output, never a view of what it was given -- ``linear``'s
transposed weight is the parameter itself (VGG's 0.41 GB classifier failed every fit
while it counted) -- nor an in-place result."""

from __future__ import annotations

import torch

from sandbox.runner.phases.analyze import Largest


def test_a_linear_layers_weight_is_not_made_by_forward() -> None:
    layer, x = torch.nn.Linear(4096, 1024), torch.randn(2, 4096)
    with torch.no_grad(), Largest() as largest:
        layer(x)
    assert largest.bytes == 2 * 1024 * 4  # the output, not the 16 MB transposed weight


def test_on_the_meta_device_too() -> None:
    """The fit measures on meta tensors first, where no storage has an address."""
    with torch.device("meta"), torch.no_grad():
        layer, x = torch.nn.Linear(4096, 1024), torch.randn(2, 4096)
        with Largest() as largest:
            layer(x)
    assert largest.bytes == 2 * 1024 * 4


def test_a_new_tensor_counts_and_an_in_place_one_does_not() -> None:
    x = torch.randn(500, 400)
    with Largest() as largest:
        x.relu_()
    assert largest.bytes == 0
    with Largest() as largest:
        _ = x.t() + 1  # the transpose is a view; the sum is new
    assert largest.bytes == 500 * 400 * 4
