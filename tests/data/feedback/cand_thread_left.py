# Candidate: right answer, but it leaves a Python thread and a child process running
# after forward (work that could go on outside what is checked and timed). The runner
# flags threads_left and processes_left.
import subprocess
import threading
import time

import torch.nn as nn

_started = []


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        if not _started:
            threading.Thread(target=time.sleep, args=(60,), name="helper", daemon=True).start()
            _started.append(subprocess.Popen(["sleep", "60"]))
        return a + b
