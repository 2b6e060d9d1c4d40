"""2-D average pooling with padding, ceil mode and count_include_pad=False:
each output is the mean of the window's values that lie inside the input
(padding is not counted), windows may run past the bottom / right edge."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size, stride=stride, padding=padding, ceil_mode=True,
                                 count_include_pad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 2
channels = 5
height = 23
width = 30
kernel_size = 3
stride = 2
padding = 1


def get_inputs():
    return [torch.randn(batch_size, channels, height, width).add(2.0)]


def get_init_inputs():
    return [kernel_size, stride, padding]
