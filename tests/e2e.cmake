# End-to-end tests: the real kforge binary, the real mock LLM server on loopback, real
# Python+PyTorch runners on the CPU. Each skips (77) where no Python imports torch.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
foreach(t test_e2e_cpu test_resume test_worker_restart test_detach_stop test_cli)
  kb_add_script_test(e2e_${t} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/${t}.py
                     LABELS e2e TIMEOUT 1800)
endforeach()
kb_add_script_test(e2e_demo_gpu COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_demo_gpu.py
                   LABELS gpu TIMEOUT 3000)
# Scheduling limits and GPU quarantine, from the trajectories' lease records (CPU).
foreach(t test_scheduling test_quarantine)
  kb_add_script_test(e2e_${t} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/${t}.py
                     LABELS e2e TIMEOUT 600)
endforeach()
kb_add_script_test(e2e_gpu_health COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_gpu_health.py
                   LABELS gpu TIMEOUT 1200)
