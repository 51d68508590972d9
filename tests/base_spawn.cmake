# base/spawn.c: real child processes (exit, signals, deadlines, groups, fds, rlimits).
kb_add_test(base_spawn SOURCES ${CMAKE_CURRENT_LIST_DIR}/base_spawn.c LIBS kb_base
            LABELS unit TIMEOUT 120)
# The containment steps: network namespace, uid drop, their named failures (77 where the
# host allows neither a network namespace nor, not being root, the uid drop).
kb_add_test(base_spawn_contain SOURCES ${CMAKE_CURRENT_LIST_DIR}/base_spawn.c LIBS kb_base
            LABELS unit TIMEOUT 60 ARGS contain)
