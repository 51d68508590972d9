# sandbox/: a policy applied in forked children: hidden, shown, written, /proc, signals,
# ptrace, sockets, namespaces; the judge's; strict and threads; a bad spec (77 without a layer).
kb_add_test(unit_sandbox SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sandbox.c LIBS kb_sandbox Threads::Threads
            LABELS unit TIMEOUT 60)
