# GPU health: the probe-twice-then-quarantine rule of the EXECUTE action, exhaustively.
# (The pool's quarantine is in gpu_pool.cmake; the run-level tests are in e2e.cmake.)
kb_add_test(unit_fsm_health SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_fsm_health.c
            LIBS kb_fsm LABELS unit TIMEOUT 30)
