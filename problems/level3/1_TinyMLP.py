import torch
import torch.nn as nn


class Model(nn.Module):
    """A small multi-layer perceptron: three fully connected layers with ReLU
    between them (none after the last)."""

    def __init__(self, in_features: int, hidden_features: int, out_features: int):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.fc2 = nn.Linear(hidden_features, hidden_features)
        self.fc3 = nn.Linear(hidden_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        h = torch.relu(self.fc2(h))
        return self.fc3(h)


batch_size = 64
in_features = 256
hidden_features = 384
out_features = 128


def get_inputs():
    return [torch.randn(batch_size, in_features) * 2.0]


def get_init_inputs():
    return [in_features, hidden_features, out_features]
