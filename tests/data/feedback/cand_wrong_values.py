# Candidate: right shape, wrong values; also prints a fake result to stdout, which must
# not reach the result channel.
import torch.nn as nn

print('{"status": "ok", "correct": true}', flush=True)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a + b + 0.5
