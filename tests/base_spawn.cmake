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
