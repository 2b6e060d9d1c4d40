"""A feature map padded to whole windows before a shifted-window block, as a Swin layer does:
channels last (batch, height, width, channels), the rows and columns padded with zeros by
(top, bottom) and (left, right), channels untouched: y[n, i, j, c] = x[n, i - top, j - left, c]
inside the input, 0 outside it."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, top: int, bottom: int, left: int, right: int):
        super().__init__()
        self.pads = [0, 0, left, right, top, bottom]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.pad(x, self.pads, "constant", 0)


batch_size = 3
height = 23
width = 19
channels = 41
top, bottom, left, right = 4, 3, 2, 5


def get_inputs():
    return [torch.randn(batch_size, height, width, channels)]


def get_init_inputs():
    return [top, bottom, left, right]
