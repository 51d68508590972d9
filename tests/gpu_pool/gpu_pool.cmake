# gpu_pool/: leases across processes, quarantine, reclaim, audit, snapshot; then a
# many-process crash test (random SIGKILLs, some inside the pool's critical section).
kb_add_test(gpu_pool SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_pool.c LIBS kb_gpool
            LABELS unit TIMEOUT 300)
kb_add_test(gpu_pool_stress SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_pool_stress.c LIBS kb_gpool
            LABELS unit TIMEOUT 600)
kb_add_test(gpu_pool_pause SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_pool_pause.c LIBS kb_gpool
            LABELS unit TIMEOUT 600)
# GPU health: the probe-twice-then-quarantine rule, as EXECUTE drives it (the run-level
# tests are in tests/e2e/e2e.cmake).
kb_add_test(unit_gpool_health SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpool_health.c
            LIBS kb_gpool kb_fb LABELS unit TIMEOUT 30)
