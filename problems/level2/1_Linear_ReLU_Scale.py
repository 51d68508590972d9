import torch
import torch.nn as nn


class Model(nn.Module):
    """A fully connected layer, then ReLU, then multiplication by a constant."""

    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.fc(x)
        x = torch.relu(x)
        return x * self.scale


batch_size = 128
in_features = 512
out_features = 256
scale = 2.5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
