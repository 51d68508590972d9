# fsm/: the transition table held to the edges of docs/DESIGN.md §3.
kb_add_test(unit_fsm_table SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fsm_table.c LIBS kb_fsm LABELS unit TIMEOUT 30)
# fsm/search.c: each strategy's parents over hand-made nodes, deterministic draws.
kb_add_test(unit_fsm_search SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fsm_search.c LIBS kb_fsm LABELS unit TIMEOUT 30)
