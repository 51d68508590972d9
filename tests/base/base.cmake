# Unit tests of base/ (each its own process, with a timeout).
kb_add_test(unit_base SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_base.c LIBS kb_base LABELS unit TIMEOUT 30)
# base/spawn.c: real child processes (exit, signals, deadlines, groups, fds, rlimits).
kb_add_test(base_spawn SOURCES ${CMAKE_CURRENT_LIST_DIR}/base_spawn.c LIBS kb_base
            LABELS unit TIMEOUT 120)
# The containment steps: network namespace, uid drop, their named failures (77 where the
# host allows neither a network namespace nor, not being root, the uid drop).
kb_add_test(base_spawn_contain SOURCES ${CMAKE_CURRENT_LIST_DIR}/base_spawn.c LIBS kb_base
            LABELS unit TIMEOUT 60 ARGS contain)
# base/banned.h: a call of each banned function fails to compile, naming what to use
# instead; the safe forms compile after it (tools/check_modules.py holds every .c file of
# the modules to including it last). Runs the compiler, no kforge code: label python.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
kb_add_script_test(base_banned
                   COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/base_banned.py
                           ${CMAKE_C_COMPILER} ${CMAKE_SOURCE_DIR}
                   LABELS unit python TIMEOUT 120)
# The trajectory log's fuzz target (base/tlog.c and its reader report/summary.c): its
# properties over its seed corpus in every build through the corpus driver
# (tests/orchestrator/orchestrator_config_corpus.c, tests/CMakeLists.txt), and under
# libFuzzer with KB_FUZZ. The summary's file is compiled in rather than linking kb_report,
# which would bring libmicrohttpd (kb_rundir, which knows where a task's log lies and its
# words, is a leaf beside base).
kb_add_test(base_tlog_corpus
            SOURCES ${KB_CORPUS_DRIVER} ${CMAKE_CURRENT_LIST_DIR}/fuzz_tlog.c
                    ${CMAKE_SOURCE_DIR}/report/summary.c
            LIBS kb_rundir kb_base LABELS unit ARGS ${CMAKE_CURRENT_LIST_DIR}/corpus_tlog)
kb_add_fuzzer(fuzz_tlog SOURCES ${CMAKE_SOURCE_DIR}/base/tlog.c
              ${CMAKE_SOURCE_DIR}/report/summary.c
              LIBS kb_rundir kb_base)
