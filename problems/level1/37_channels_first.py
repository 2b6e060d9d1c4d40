"""An image batch from channels-last to channels-first, as a model fed by an image loader
(or by a vision transformer's patch grid) does before its first convolution:
y = x.permute(0, 3, 1, 2).contiguous(), y[n, c, h, w] = x[n, h, w, c]."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.permute(0, 3, 1, 2).contiguous()


batch_size = 4
height = 19
width = 23
channels = 40


def get_inputs():
    return [torch.randn(batch_size, height, width, channels)]


def get_init_inputs():
    return []
