# Test problem: a module with parameters (seeded init must match) and a dropout that
# eval() mode must switch off.
import torch
import torch.nn as nn

batch_size = 8
in_features = 64
out_features = 32


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(p=0.5)

    def forward(self, x):
        return torch.relu(self.dropout(self.linear(x)))


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
