# Candidate: computes a + b for its first six calls (the correctness trials, five and
# the second input distribution) and then returns its last output whatever it is given,
# as a cache that knows when it is checked would. Right on every trial, stale on every
# timed call: each has inputs of its own, so the fingerprints of the sampled calls miss
# the reference's (stale_output).
import torch.nn as nn

_seen = {"calls": 0, "out": None}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        _seen["calls"] += 1
        if _seen["calls"] <= 6 or _seen["out"] is None or _seen["out"].shape != a.shape:
            _seen["out"] = a + b
        return _seen["out"]
