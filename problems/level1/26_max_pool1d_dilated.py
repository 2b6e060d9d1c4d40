"""1-D max pooling with a dilated window: y[b, c, i] = max_t x[b, c, 2 i - 2 + 3 t] over the
t in [0, 4) that land inside the input (window 4, stride 2, padding 2, dilation 3)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int):
        super().__init__()
        self.pool = nn.MaxPool1d(kernel_size, stride=stride, padding=padding, dilation=dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 4
channels = 7
length = 129
kernel_size = 4
stride = 2
padding = 2
dilation = 3


def get_inputs():
    return [torch.randn(batch_size, channels, length).sub(2.0)]


def get_init_inputs():
    return [kernel_size, stride, padding, dilation]
