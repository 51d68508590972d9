# Unit tests of base/, rundir/ and fsm/ (each its own process, with a timeout).
kb_add_test(unit_base SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_base.c LIBS kb_base LABELS unit TIMEOUT 30)
kb_add_test(unit_fsm_table SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_fsm_table.c LIBS kb_fsm LABELS unit TIMEOUT 30)
kb_add_test(unit_rundir SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_rundir.c LIBS kb_rundir LABELS unit TIMEOUT 30)
# orchestrator/claims.c: a Slurm run's claims (8 processes racing for 40 tasks: one owner
# each), takes, steals and releases, and the shards' heartbeats seen dead and alive.
kb_add_test(unit_claims SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_claims.c LIBS kb_orch LABELS unit TIMEOUT 60)
# sandbox/: a policy applied in forked children: hidden, shown, written, /proc, signals,
# ptrace, sockets, namespaces; the judge's; strict and threads; a bad spec (77 without a layer).
kb_add_test(unit_sandbox SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_sandbox.c LIBS kb_sandbox Threads::Threads
            LABELS unit TIMEOUT 60)
