# The fuzz targets of the trajectory log (base/tlog.c and its reader report/summary.c), code
# extraction (llm/extract.c) and the runner's result (feedback/result.c, text.c). Each
# target's properties run over its seed corpus in every build through the corpus driver
# (tests/orchestrator_config_corpus.c, shared with the config target); fast, label unit,
# so the ASan pass of tools/test.sh runs them too. The summary's file is compiled in
# rather than linking kb_report, which would bring libmicrohttpd (kb_rundir, which knows
# where a task's log lies and its words, is a leaf beside base).
kb_add_test(base_tlog_corpus
            SOURCES ${CMAKE_CURRENT_LIST_DIR}/orchestrator_config_corpus.c
                    ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_tlog.c
                    ${CMAKE_SOURCE_DIR}/report/summary.c
            LIBS kb_rundir kb_base LABELS unit ARGS ${CMAKE_CURRENT_LIST_DIR}/fuzz/corpus_tlog)
kb_add_test(llm_extract_corpus
            SOURCES ${CMAKE_CURRENT_LIST_DIR}/orchestrator_config_corpus.c
                    ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_extract.c
            LIBS kb_llm LABELS unit ARGS ${CMAKE_CURRENT_LIST_DIR}/fuzz/corpus_extract)
kb_add_test(feedback_result_corpus
            SOURCES ${CMAKE_CURRENT_LIST_DIR}/orchestrator_config_corpus.c
                    ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_result.c
            LIBS kb_fb LABELS unit ARGS ${CMAKE_CURRENT_LIST_DIR}/fuzz/corpus_result)

# libFuzzer targets (clang only, KB_FUZZ: see orchestrator_config.cmake):
#   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DKB_FUZZ=ON
#   cmake --build build-fuzz --target fuzz_tlog fuzz_extract fuzz_result
#   build-fuzz/tests/fuzz_tlog -max_total_time=300 "$(mktemp -d)" tests/fuzz/corpus_tlog
# The sources under test are compiled into each target so that they carry the fuzzer's
# coverage instrumentation; the libraries supply the rest.
if(KB_FUZZ)
  function(kb_add_fuzzer name)
    cmake_parse_arguments(F "" "" "SOURCES;LIBS" ${ARGN})
    add_executable(${name} ${CMAKE_CURRENT_LIST_DIR}/fuzz/${name}.c ${F_SOURCES})
    target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests)
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(${name} PRIVATE ${F_LIBS})
  endfunction()
  kb_add_fuzzer(fuzz_tlog SOURCES ${CMAKE_SOURCE_DIR}/base/tlog.c
                ${CMAKE_SOURCE_DIR}/report/summary.c
                LIBS kb_rundir kb_base)
  kb_add_fuzzer(fuzz_extract SOURCES ${CMAKE_SOURCE_DIR}/llm/extract.c LIBS kb_base)
  kb_add_fuzzer(fuzz_result SOURCES ${CMAKE_SOURCE_DIR}/feedback/result.c
                ${CMAKE_SOURCE_DIR}/feedback/text.c LIBS kb_fb)
endif()
