# Candidate: writes the environment it was given to kforge_env.json in the working
# directory (the test checks that no API key reached it), then adds correctly.
import json
import os

import torch.nn as nn

with open("kforge_env.json", "w") as f:
    json.dump(dict(os.environ), f)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a + b
