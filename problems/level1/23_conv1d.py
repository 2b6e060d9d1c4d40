"""1-D convolution with bias, kernel size 3, padding 1 (same length):
y[b, o, l] = bias[o] + sum_{c, t} w[o, c, t] * x[b, c, l + t - 1]."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size=3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 3
in_channels = 11
out_channels = 13
length = 97


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels]
