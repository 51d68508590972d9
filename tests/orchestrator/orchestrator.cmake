# orchestrator/config.c and tasks.c: the config loader (every bad config in
# tests/data/config/bad with its exact message, defaults, flow style, --set, ~ and
# relative paths, emit -> load round trip), the task listing, and the fuzz target's
# properties over its seed corpus, the data configs and configs/ (always built, no
# libFuzzer needed).
kb_add_test(orchestrator_config SOURCES ${CMAKE_CURRENT_LIST_DIR}/orchestrator_config.c
            LIBS kb_orch LABELS unit ARGS ${CMAKE_SOURCE_DIR}/tests/data/config)
kb_add_test(orchestrator_tasks SOURCES ${CMAKE_CURRENT_LIST_DIR}/orchestrator_tasks.c
            LIBS kb_orch LABELS unit)
kb_add_test(orchestrator_config_corpus
            SOURCES ${KB_CORPUS_DRIVER} ${CMAKE_CURRENT_LIST_DIR}/fuzz_config.c
            LIBS kb_orch LABELS unit
            ARGS ${CMAKE_CURRENT_LIST_DIR}/corpus_config
                 ${CMAKE_SOURCE_DIR}/tests/data/config/bad
                 ${CMAKE_SOURCE_DIR}/tests/data/config/good
                 ${CMAKE_SOURCE_DIR}/configs)
# The loader's sources are compiled into the libFuzzer target so that they carry the
# fuzzer's coverage instrumentation; the rest of kb_orch is not needed.
kb_add_fuzzer(fuzz_config SOURCES ${CMAKE_SOURCE_DIR}/orchestrator/config.c
              ${CMAKE_SOURCE_DIR}/orchestrator/tasks.c
              LIBS kb_base PkgConfig::YAML m)

# orchestrator/clocks.c: gpus.lock_clocks against an nvidia-smi of the test's: lock, give
# back, refusal.
kb_add_test(orchestrator_clocks SOURCES ${CMAKE_CURRENT_LIST_DIR}/orchestrator_clocks.c
            LIBS kb_orch LABELS unit)
# orchestrator/progress.c's pure parts: durations, the estimate of what is left, the
# block (cut to the terminal's width, counting a UTF-8 character as one column), the
# summary line and the final summary. The display itself is tested through a
# pseudo-terminal in tests/e2e/test_progress.py.
kb_add_test(orchestrator_progress SOURCES ${CMAKE_CURRENT_LIST_DIR}/orchestrator_progress.c
            LIBS kb_orch LABELS unit)
# orchestrator/claims.c: a Slurm run's claims (8 processes racing for 40 tasks: one owner
# each), takes, steals and releases, and the shards' heartbeats seen dead and alive.
kb_add_test(unit_claims SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_claims.c LIBS kb_orch LABELS unit TIMEOUT 60)
