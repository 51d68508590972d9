# kforge soak problem (tools/bench/soak writes one copy per task, with a marker line
# naming the task first, so the mock LLM can tell the tasks apart by their prompts).
# Elementwise add; sizes are module globals, as in KernelBench.
import torch
import torch.nn as nn

batch_size = 16
dim = 1024


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a + b


def get_inputs():
    return [torch.rand(batch_size, dim), torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
