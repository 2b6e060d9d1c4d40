"""WRONG on purpose: computes the gate with torch ops (addcmul) on the host and launches no kernel at all.

Caught by: kernel_launched
"""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        return torch.addcmul(c, torch.tanh(a), torch.sigmoid(b))
