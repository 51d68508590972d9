# orchestrator/config.c and tasks.c: the config loader (every bad config in
# data/config/bad with its exact message, defaults, flow style, --set, ~ and relative
# paths, emit -> load round trip), the task listing, and the fuzz target's properties
# over its seed corpus, the data configs and configs/ (always built, no libFuzzer
# needed).
kb_add_test(orchestrator_config SOURCES ${CMAKE_CURRENT_LIST_DIR}/orchestrator_config.c
            LIBS kb_orch LABELS unit ARGS ${CMAKE_CURRENT_LIST_DIR}/data/config)
kb_add_test(orchestrator_tasks SOURCES ${CMAKE_CURRENT_LIST_DIR}/orchestrator_tasks.c
            LIBS kb_orch LABELS unit)
kb_add_test(orchestrator_config_corpus
            SOURCES ${CMAKE_CURRENT_LIST_DIR}/orchestrator_config_corpus.c
                    ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_config.c
            LIBS kb_orch LABELS unit
            ARGS ${CMAKE_CURRENT_LIST_DIR}/fuzz/corpus_config
                 ${CMAKE_CURRENT_LIST_DIR}/data/config/bad
                 ${CMAKE_CURRENT_LIST_DIR}/data/config/good
                 ${CMAKE_SOURCE_DIR}/configs)

# libFuzzer target (clang only):
#   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DKB_FUZZ=ON
#   cmake --build build-fuzz --target fuzz_config
#   build-fuzz/fuzz_config -max_total_time=300 "$(mktemp -d)" tests/fuzz/corpus_config
# (libFuzzer adds new inputs to the first directory, so give it a scratch one.)
option(KB_FUZZ "build the libFuzzer targets (needs clang)" OFF)
if(KB_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "KB_FUZZ needs clang: configure with -DCMAKE_C_COMPILER=clang")
  endif()
  # The loader's sources are compiled into the target so that they carry the fuzzer's
  # coverage instrumentation; the rest of kb_orch is not needed.
  add_executable(fuzz_config ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_config.c
                 ${CMAKE_SOURCE_DIR}/orchestrator/config.c
                 ${CMAKE_SOURCE_DIR}/orchestrator/tasks.c)
  target_include_directories(fuzz_config PRIVATE ${CMAKE_SOURCE_DIR}/tests)
  target_compile_options(fuzz_config PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_config PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_config PRIVATE kb_base PkgConfig::YAML m)
endif()
