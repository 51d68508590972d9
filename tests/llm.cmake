# llm/: providers (openai against the real mock server, replay), extraction, prompts.
# The openai test starts tests/mock_llm_server.py with python3 from PATH (stdlib only).
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
