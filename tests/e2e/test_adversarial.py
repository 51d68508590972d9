#!/usr/bin/env python3
"""test_adversarial: the CPU suite of cheating and honest candidates (tests/data/
{adversarial,honest}/cpu and the CPU demo's correct turns), judged by `kforge eval` and by
a run, which must agree with each other and with each file's header. The driver and the
header format: adversarial.py.

Two evals at a time, and two executions at a time in the run: the same CPU threads per
execution in both (they are part of a baseline's cache key), so both use one baseline.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from adversarial import Suite  # noqa: E402
from kfe2e import torch_python  # noqa: E402

Suite("cpu", torch_python(), min_adversarial=27, min_honest=10, perf_trials=10, warmup=1,
      eval_parallel=2, run_first=False, runner={"cpu_exec_slots": 2}, workers=2).main()
