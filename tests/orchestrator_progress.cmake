# orchestrator/progress.c's pure parts: durations, the estimate of what is left, the
# block (cut to the terminal's width, counting a UTF-8 character as one column), the
# summary line and the final summary. The display itself is tested through a
# pseudo-terminal in e2e/test_progress.py.
kb_add_test(orchestrator_progress SOURCES ${CMAKE_CURRENT_LIST_DIR}/orchestrator_progress.c
            LIBS kb_orch LABELS unit)
