"""A candidate that fakes an environment failure: it prints the compiler's words for a
missing torch header and raises the error load_inline would, without building anything.
The environment is fine, so the runner must call this a compile_error, not env_error."""
import sys

print("fatal error: torch/extension.h: No such file or directory")
sys.stdout.flush()
raise RuntimeError("Error building extension 'fake': main.cpp:1:10: fatal error: "
                   "torch/extension.h: No such file or directory\n/bin/sh: 1: c++: not found")
