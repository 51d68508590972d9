# problems/ and configs/demo_responses/: every bundled problem loads and gives a finite,
# non-degenerate output of the right shape quickly on a CPU; every problem has three
# recorded cpu and cuda responses with the intended code-block structure. Builds no
# extension. Skips (77) where the Python cannot import torch.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
set(KB_PROBLEMS_PYTHON /usr/bin/python3)
if(NOT EXISTS ${KB_PROBLEMS_PYTHON})
  set(KB_PROBLEMS_PYTHON ${Python3_EXECUTABLE})
endif()
kb_add_script_test(problems_bundled
                   COMMAND ${KB_PROBLEMS_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/problems_bundled.py
                   LABELS unit python TIMEOUT 120)
