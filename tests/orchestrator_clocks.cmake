# orchestrator/clocks.c: gpus.lock_clocks against an nvidia-smi of the test's: lock, give
# back, refusal.
kb_add_test(orchestrator_clocks SOURCES ${CMAKE_CURRENT_LIST_DIR}/orchestrator_clocks.c
            LIBS kb_orch LABELS unit)
