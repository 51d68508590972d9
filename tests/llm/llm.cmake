# llm/: providers (openai against the real mock server, replay), extraction, prompts.
# The openai test starts tests/llm/mock_llm_server.py with python3 from PATH (stdlib only).
kb_add_test(llm_openai SOURCES ${CMAKE_CURRENT_LIST_DIR}/llm_openai.c LIBS kb_llm
            LABELS unit TIMEOUT 120)
kb_add_test(llm_replay SOURCES ${CMAKE_CURRENT_LIST_DIR}/llm_replay.c LIBS kb_llm
            LABELS unit TIMEOUT 60)
kb_add_test(llm_extract SOURCES ${CMAKE_CURRENT_LIST_DIR}/llm_extract.c LIBS kb_llm
            LABELS unit TIMEOUT 60)
kb_add_test(llm_prompt SOURCES ${CMAKE_CURRENT_LIST_DIR}/llm_prompt.c LIBS kb_llm
            LABELS unit TIMEOUT 60)
# anthropic against the same mock server (its Messages API on /v1/messages); command
# with real child programs from tests/data/llm_command.
kb_add_test(llm_anthropic SOURCES ${CMAKE_CURRENT_LIST_DIR}/llm_anthropic.c LIBS kb_llm
            LABELS unit TIMEOUT 120)
kb_add_test(llm_command SOURCES ${CMAKE_CURRENT_LIST_DIR}/llm_command.c LIBS kb_llm
            LABELS unit TIMEOUT 120)
# Code extraction's fuzz target (llm/extract.c): its properties over its seed corpus in
# every build, and under libFuzzer with KB_FUZZ (tests/CMakeLists.txt).
kb_add_test(llm_extract_corpus
            SOURCES ${KB_CORPUS_DRIVER} ${CMAKE_CURRENT_LIST_DIR}/fuzz_extract.c
            LIBS kb_llm LABELS unit ARGS ${CMAKE_CURRENT_LIST_DIR}/corpus_extract)
kb_add_fuzzer(fuzz_extract SOURCES ${CMAKE_SOURCE_DIR}/llm/extract.c LIBS kb_base)
