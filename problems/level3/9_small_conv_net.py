"""A small image classifier end to end: conv 3x3 -> batch norm (eval mode) -> ReLU ->
max-pool 2x2 -> conv 3x3 (twice the channels) -> ReLU -> global average pool ->
Linear -> ReLU -> Linear, giving (batch, num_classes) logits.

Both convolutions keep the spatial size (padding 1). The pool is in floor mode, so the
odd last row and column of the default 23 x 19 map are dropped. The batch norm
normalises with the running statistics it holds (set away from 0 and 1 here, so that
ignoring them shows), not with the batch's."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels: int, channels: int, hidden: int, num_classes: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, 2 * channels, kernel_size=3, padding=1)
        self.fc1 = nn.Linear(2 * channels, hidden)
        self.fc2 = nn.Linear(hidden, num_classes)
        nn.init.uniform_(self.bn1.weight, 0.5, 1.5)
        nn.init.uniform_(self.bn1.bias, -0.5, 0.5)
        with torch.no_grad():
            self.bn1.running_mean.uniform_(-0.5, 0.5)
            self.bn1.running_var.uniform_(0.5, 2.0)
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = torch.relu(self.conv2(x)).mean(dim=(2, 3))
        return self.fc2(torch.relu(self.fc1(x)))


batch_size = 4
in_channels = 3
channels = 13
height = 23
width = 19
hidden = 37
num_classes = 11


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, channels, hidden, num_classes]
