# Unit tests of base/ and fsm/ (each its own process, with a timeout).
kb_add_test(unit_base SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_base.c LIBS kb_base LABELS unit TIMEOUT 30)
kb_add_test(unit_fsm_table SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_fsm_table.c LIBS kb_fsm LABELS unit TIMEOUT 30)
