# base/spawn.c: real child processes (exit, signals, deadlines, groups, fds, rlimits).
kb_add_test(base_spawn SOURCES ${CMAKE_CURRENT_LIST_DIR}/base_spawn.c LIBS kb_base
            LABELS unit TIMEOUT 120)
