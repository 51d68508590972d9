# GPU health: the probe-twice-then-quarantine rule (gpu_pool), as EXECUTE drives it.
# (The pool's quarantine is in gpu_pool.cmake; the run-level tests are in e2e.cmake.)
kb_add_test(unit_gpool_health SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_gpool_health.c
            LIBS kb_gpool kb_fb LABELS unit TIMEOUT 30)
