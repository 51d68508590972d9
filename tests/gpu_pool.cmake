# gpu_pool/: leases across processes, quarantine, reclaim, audit, snapshot; then a
# many-process crash test (random SIGKILLs, some inside the pool's critical section).
kb_add_test(gpu_pool SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_pool.c LIBS kb_gpool
            LABELS unit TIMEOUT 300)
kb_add_test(gpu_pool_stress SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_pool_stress.c LIBS kb_gpool
            LABELS unit TIMEOUT 600)
kb_add_test(gpu_pool_pause SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_pool_pause.c LIBS kb_gpool
            LABELS unit TIMEOUT 600)
