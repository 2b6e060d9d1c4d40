"""Classifier head: softmax over the outputs of a linear layer, softmax(x @ W^T + b)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features: int, num_classes: int):
        super().__init__()
        self.linear = nn.Linear(in_features, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.linear(x), dim=-1)


batch_size = 41
in_features = 83
num_classes = 59


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, num_classes]
