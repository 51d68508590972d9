# Unit tests of base/, rundir/ and fsm/ (each its own process, with a timeout).
kb_add_test(unit_base SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_base.c LIBS kb_base LABELS unit TIMEOUT 30)
kb_add_test(unit_fsm_table SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_fsm_table.c LIBS kb_fsm LABELS unit TIMEOUT 30)
kb_add_test(unit_rundir SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_rundir.c LIBS kb_rundir LABELS unit TIMEOUT 30)
