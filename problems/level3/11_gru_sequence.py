"""A GRU layer unrolled over a sequence, with its gates written out (nn.GRU's equations):

    r = sigmoid(gx_r + gh_r),  z = sigmoid(gx_z + gh_z),  n = tanh(gx_n + r * gh_n)
    h' = (1 - z) * n + z * h

where gx = x_t W_x^T + b_x and gh = h W_h^T + b_h, each split into the reset, update and
new blocks in that order. The initial state h0 is an input; the output is the state
after every step, (batch, seq, hidden)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.x_gates = nn.Linear(input_size, 3 * hidden_size)
        self.h_gates = nn.Linear(hidden_size, 3 * hidden_size)

    def forward(self, x: torch.Tensor, h0: torch.Tensor) -> torch.Tensor:
        gx = self.x_gates(x)  # every step's input part at once: (batch, seq, 3 * hidden)
        h = h0
        states = []
        for t in range(x.shape[1]):
            xr, xz, xn = gx[:, t].chunk(3, dim=-1)
            hr, hz, hn = self.h_gates(h).chunk(3, dim=-1)
            r = torch.sigmoid(xr + hr)
            z = torch.sigmoid(xz + hz)
            n = torch.tanh(xn + r * hn)
            h = (1 - z) * n + z * h
            states.append(h)
        return torch.stack(states, dim=1)


batch_size = 5
seq_len = 13
input_size = 29
hidden_size = 37


def get_inputs():
    return [torch.randn(batch_size, seq_len, input_size), torch.randn(batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size]
