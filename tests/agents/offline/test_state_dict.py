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

ROOT = Path(__file__).resolve().parents[3]
NETWORKS = ["1_mlp.py", "5_multihead_self_attention.py", "8_conv1d_residual_block.py", "9_small_conv_net.py",
            "10_transformer_block.py"]


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


DENSE = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Squeeze(nn.Module):
    """A helper class of the reference's file, reading F."""

    def __init__(self, channels):
        super().__init__()
        self.fc = nn.Linear(channels, channels)

    def forward(self, x):
        return x * F.sigmoid(self.fc(x.mean((2, 3)))).unsqueeze(-1).unsqueeze(-1)


class Model(nn.Module):
    def __init__(self, num_layers, in_channels, growth):
        super(Model, self).__init__()

        def norm(c):  # a function nested in the constructor
            return nn.BatchNorm2d(c)

        layers = []
        for i in range(num_layers):
            layers.append(self._make_layer(in_channels + i * growth, growth, norm))
        self.layers = nn.ModuleList(layers)
        self.squeeze = Squeeze(in_channels + num_layers * growth)

    def _make_layer(self, c_in, growth, norm):
        return nn.Sequential(norm(c_in), nn.ReLU(), nn.Conv2d(c_in, growth, 3, padding=1, bias=False))

    def forward(self, x):
        for layer in self.layers:
            x = torch.cat([x, layer(x)], 1)
        return self.squeeze(x)


num_layers = 3
in_channels = 6
growth = 4


def get_inputs():
    return [torch.randn(2, in_channels, 10, 12)]


def get_init_inputs():
    return [num_layers, in_channels, growth]
'''


def test_the_constructors_helpers_are_copied_so_every_size_builds_the_references_parameters() -> None:
    """KernelBench level3/14 (DenseNet121DenseBlock) and the nets built of helper classes
    (DenseNet, ResNet, EfficientNet, ShuffleNet...): the constructor calls a helper method of
    Model, a helper class of the file and a function of its own, and the channel counts grow
    (in + i x growth). ModelNew runs the same constructor with those helpers copied in, so its
    parameters follow the constructor's arguments at sizes the engine never analysed."""
    from agents.offline.signature import from_source

    body = from_source(DENSE).init_body
    assert body is not None and any(s.startswith("class Squeeze(nn.Module)") for s in body)
    assert any("_make_layer(self, in_channels + i * growth, growth, norm)" in s for s in body), body
    assert "import torch.nn.functional as F" in body
    proposals = cpu_proposals(DENSE, 1)
    assert proposals, "no C proposal"
    ref, cand = load_source(DENSE, "ref_sd_dense"), load_source(proposals[0].source, "cand_sd_dense")
    # the analysed sizes, then other channel counts (the layer count stays: ModelNew's forward
    # is the traced graph, one stage per layer)
    for init in ([3, 6, 4], [3, 5, 7]):
        model = ref.Model(*init)
        state = _trained(model)
        new = cand.ModelNew(*init)
        new.load_state_dict(state, strict=True)
        model.load_state_dict(state)  # both in training mode, as the engine analysed it (batch statistics)
        x = torch.randn(2, init[1], 7, 9)
        with torch.no_grad():
            torch.testing.assert_close(new(x), model(x), atol=1e-3, rtol=1e-3)


def test_a_constructor_reading_a_module_constant_is_not_copied() -> None:
    """A constructor reading a size constant of the reference's file cannot run in ModelNew,
    whose file has no such constant -- except for a plain tensor attribute made from it
    (KernelBench level3/41's ``self.h0 = torch.randn(..., batch_size, ...)``: not in the
    state_dict, never read by the engine's kernels), which is left out."""
    from agents.offline.signature import from_source

    with_constant = DENSE.replace("growth = 4\n", "growth = 4\nbatch = 2\n")
    state = with_constant.replace("self.squeeze = Squeeze(in_channels + num_layers * growth)",
                                  "self.h0 = torch.zeros(batch, growth)")
    body = from_source(state).init_body
    assert body is not None and not any("self.h0" in line for line in body[1])
    layer = with_constant.replace("self.squeeze = Squeeze(in_channels + num_layers * growth)",
                                  "self.squeeze = Squeeze(batch)")
    assert from_source(layer).init_body is None
