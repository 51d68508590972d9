# feedback/: the runner protocol. feedback_text needs nothing; feedback_stage needs root
# (it skips, 77, without: no user switch, nothing to stage); feedback_run and
# feedback_runner drive the real Python runner on the CPU (they skip, 77, where no
# Python imports torch; C++ extension builds make them slow); feedback_gpu needs a GPU.
# Label python: a test of the Python runner alone, which runs no kforge C code (the
# sanitizer pass of tools/test.sh leaves it out).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
kb_add_test(feedback_text SOURCES ${CMAKE_CURRENT_LIST_DIR}/feedback_text.c LIBS kb_fb
            LABELS unit TIMEOUT 60)
kb_add_test(feedback_verdict SOURCES ${CMAKE_CURRENT_LIST_DIR}/feedback_verdict.c LIBS kb_fb
            LABELS unit TIMEOUT 60)
kb_add_test(feedback_stage SOURCES ${CMAKE_CURRENT_LIST_DIR}/feedback_stage.c LIBS kb_fb
            LABELS unit TIMEOUT 120)
kb_add_test(feedback_run SOURCES ${CMAKE_CURRENT_LIST_DIR}/feedback_run.c LIBS kb_fb
            ARGS steps LABELS unit TIMEOUT 600)
# The same program's warm-runner half, as a test of its own so that the halves run side
# by side (the sanitizer build's unit tests waited on the whole for about a minute).
kb_add_script_test(feedback_run_warm COMMAND feedback_run warm LABELS unit TIMEOUT 600)
kb_add_test(feedback_selftest SOURCES ${CMAKE_CURRENT_LIST_DIR}/feedback_selftest.c LIBS kb_fb
            LABELS unit TIMEOUT 900)
kb_add_script_test(feedback_env
                   COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/feedback_env.py
                   LABELS unit python TIMEOUT 900)
kb_add_script_test(feedback_runner
                   COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/feedback_runner.py
                   LABELS unit python TIMEOUT 600)
kb_add_test(feedback_cache SOURCES ${CMAKE_CURRENT_LIST_DIR}/feedback_cache.c LIBS kb_fb
            LABELS unit TIMEOUT 120)
kb_add_script_test(feedback_fastbuild
                   COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/feedback_fastbuild.py
                   LABELS unit python TIMEOUT 900)
kb_add_script_test(feedback_raw
                   COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/feedback_raw.py
                   LABELS unit python TIMEOUT 300)
kb_add_test(feedback_gpu SOURCES ${CMAKE_CURRENT_LIST_DIR}/feedback_gpu.c LIBS kb_fb
            LABELS gpu TIMEOUT 900)
# PROFILE under the CUPTI injection (skips, 77, without a GPU or libkforge_kprof.so)
kb_add_test(feedback_kprof_gpu SOURCES ${CMAKE_CURRENT_LIST_DIR}/feedback_kprof_gpu.c LIBS kb_fb
            LABELS gpu TIMEOUT 900)
# the device facts of the prompt's hardware block (feedback/kforge_hardware.py)
kb_add_script_test(feedback_hardware
                   COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/feedback_hardware.py
                   LABELS unit python TIMEOUT 120)
kb_add_script_test(feedback_static_check
                   COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/feedback_static_check.py
                   LABELS unit python TIMEOUT 120)
# every flag the runner (and the C side) can raise is in feedback/verdict.c's table
kb_add_script_test(feedback_flags
                   COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/feedback_flags.py
                   LABELS unit TIMEOUT 60)
# the adversarial suites' candidates (tests/data/{adversarial,honest}/{cpu,cuda}): the static
# checks' findings agree with each file's header, so the CUDA set is checked off a GPU host
kb_add_script_test(adversarial_static
                   COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/adversarial_static.py
                   LABELS unit python TIMEOUT 120)
# The runner's result's fuzz target (feedback/result.c, text.c): its properties over its
# seed corpus in every build, and under libFuzzer with KB_FUZZ (tests/CMakeLists.txt).
kb_add_test(feedback_result_corpus
            SOURCES ${KB_CORPUS_DRIVER} ${CMAKE_CURRENT_LIST_DIR}/fuzz_result.c
            LIBS kb_fb LABELS unit ARGS ${CMAKE_CURRENT_LIST_DIR}/corpus_result)
kb_add_fuzzer(fuzz_result SOURCES ${CMAKE_SOURCE_DIR}/feedback/result.c
              ${CMAKE_SOURCE_DIR}/feedback/text.c LIBS kb_fb)
