#!/usr/bin/env python3
"""test_adversarial_gpu: the CUDA suite of cheating and honest candidates (tests/data/
{adversarial,honest}/cuda and the CUDA demo's correct turns), judged by `kforge eval
--device cuda` and by a run, which must agree with each other and with each file's header.
The driver and the header format: adversarial.py. Skips (77) without a GPU.

The run comes first: its compile slots (half the cores) build the candidates in parallel
while its one execution slot per GPU runs them in turn, and the shared build cache it
fills makes every eval after it a cache hit; the evals then run one at a time, since two
executions on one GPU would time each other (the side-stream check compares wall and
event time).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from adversarial import Suite  # noqa: E402
from kfe2e import cuda_torch_python  # noqa: E402

Suite("cuda", cuda_torch_python(), min_adversarial=25, min_honest=10, perf_trials=20,
      warmup=2, eval_parallel=1, run_first=True, runner={}, workers=16, eval_timeout=900,
      run_timeout=2400).main()
