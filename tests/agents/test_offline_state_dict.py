"""A user's trained weights in the optimised model (issue 30): the offline engine's ModelNew
for a whole network keeps the reference's parameters and buffers under the same names and
shapes, so the reference's ``state_dict`` -- weights it was never initialised with, batch
norm running statistics included -- loads strictly, and the loaded ModelNew matches the
loaded reference on inputs it was never tried on. No judge: the candidate is imported here
(our own generated code; the references are the repo's bundled problems)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from .cpu_harness import cpu_proposals, load_source

ROOT = Path(__file__).resolve().parents[2]
NETWORKS = ["1_mlp.py", "8_conv1d_residual_block.py", "9_small_conv_net.py", "10_transformer_block.py"]


def _trained(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The model's state with every float tensor moved away from its initial values, as
    training (and batch norm's running statistics) would."""
    gen = torch.Generator().manual_seed(1234)
    state = {}
    for name, t in model.state_dict().items():
        if t.is_floating_point():
            noise = torch.rand(t.shape, generator=gen, dtype=t.dtype)
            t = t + 0.3 * noise if "running_var" not in name else t * (0.5 + noise)
        state[name] = t.clone()
    return state


@pytest.mark.parametrize("name", NETWORKS)
def test_the_engines_model_loads_the_references_state_dict_and_matches_it(name: str) -> None:
    path = ROOT / "problems" / "level3" / name
    source = path.read_text()
    proposals = cpu_proposals(source, 1)
    assert proposals, f"{name}: no C proposal"
    tag = path.stem
    ref = load_source(source, f"ref_sd_{tag}")
    cand = load_source(proposals[0].source, f"cand_sd_{tag}")
    init = list(ref.get_init_inputs())
    torch.manual_seed(0)
    model = ref.Model(*init)
    state = _trained(model)
    model.load_state_dict(state)
    torch.manual_seed(99)  # ModelNew starts from other weights: only the load can make it match
    new = cand.ModelNew(*init)
    assert {k: tuple(v.shape) for k, v in new.state_dict().items()} == {k: tuple(v.shape) for k, v in state.items()}
    new.load_state_dict(state, strict=True)
    model.eval()
    new.eval()
    torch.manual_seed(7)  # fresh inputs, not the ones the engine's analysis saw
    inputs = [x * 1.5 + 0.1 if isinstance(x, torch.Tensor) and x.is_floating_point() else x
              for x in ref.get_inputs()]
    with torch.no_grad():
        want = model(*inputs)
        got = new(*inputs)
        torch.manual_seed(99)
        unloaded = cand.ModelNew(*init)(*inputs)
    torch.testing.assert_close(got, want, atol=1e-3, rtol=1e-3)
    assert not torch.allclose(unloaded, want, atol=1e-3, rtol=1e-3), "the weights made no difference"


BLOCK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    expansion = 2

    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels * self.expansion, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(channels * self.expansion)
        self.eval()

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(2, 5, 9, 11)]


def get_init_inputs():
    return [5]
'''


def test_a_class_attribute_the_constructor_reads_is_kept() -> None:
    """KernelBench level3/8 (ResNetBasicBlock): `expansion = 1` on the class, read as
    `self.expansion` in __init__; ModelNew runs that constructor, so it needs it too."""
    proposals = cpu_proposals(BLOCK, 1)
    assert proposals and "self.expansion = 2" in proposals[0].source
    ref, cand = load_source(BLOCK, "ref_sd_block"), load_source(proposals[0].source, "cand_sd_block")
    model = ref.Model(5)
    new = cand.ModelNew(5)
    new.load_state_dict(_trained(model), strict=True)
    model.load_state_dict(_trained(model))
    new.eval()
    x = torch.randn(2, 5, 9, 11)
    with torch.no_grad():
        torch.testing.assert_close(new(x), model(x), atol=1e-3, rtol=1e-3)
