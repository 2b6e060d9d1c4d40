"""A stacked bidirectional LSTM (nn.LSTM, batch first) from a given initial state; the
result is the final hidden state of every layer and direction, h_n:
(num_layers * 2, batch, hidden).

Per step, for each layer and direction: gates = x_t W_ih^T + b_ih + h W_hh^T + b_hh, split
into input, forget, cell and output gates (that order); c' = f * c + i * tanh(g),
h' = o * tanh(c'). The reverse direction walks the sequence from its last step; the next
layer reads both directions' outputs side by side."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, num_layers: int):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, bidirectional=True)

    def forward(self, x: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor) -> torch.Tensor:
        _, (h_n, _) = self.lstm(x, (h0, c0))
        return h_n


batch_size = 3
seq_len = 5
input_size = 13
hidden_size = 17
num_layers = 2


def get_inputs():
    return [torch.randn(batch_size, seq_len, input_size), torch.randn(num_layers * 2, batch_size, hidden_size),
            torch.randn(num_layers * 2, batch_size, hidden_size).mul(2.0)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
