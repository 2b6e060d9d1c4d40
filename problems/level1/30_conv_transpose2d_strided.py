"""2-D transposed convolution, stride 2, padding 1, output padding 1, two groups, bias:
each input pixel scatters its weighted window into the output, which is twice as large
(y[b, o, 2i - 1 + p, 2j - 1 + q] += x[b, c, i, j] * w[c, o mod half, p, q] within a group)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=2, padding=1,
                                       output_padding=1, groups=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 2
in_per_group = 3
out_per_group = 5
kernel_size = 3
height = 13
width = 17


def get_inputs():
    return [torch.randn(batch_size, in_per_group * 2, height, width)]


def get_init_inputs():
    return [in_per_group * 2, out_per_group * 2, kernel_size]
