# rundir/: the run directory's layout and the words its logs are written in.
kb_add_test(unit_rundir SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_rundir.c LIBS kb_rundir LABELS unit TIMEOUT 30)
